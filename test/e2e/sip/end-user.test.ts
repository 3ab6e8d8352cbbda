import assert from 'node:assert/strict';
import path from 'node:path';
import { waitForBound } from '../../support/wait.js';
import { SipError, type Responder, type SipRequest } from '../../../sip/stack/index.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  RtpSink,
  runSipp,
  carrier,
  api,
  SCENARIOS,
  type TestAccount,
  allocateSwitchPorts,
} from '../support/harness.js';
import { TestPhone, speechUlaw } from '../support/phone.js';
import { nextPort, nextPorts } from '../../support/ports.js';

const PORTS = allocateSwitchPorts();
const PHONE_SIP = nextPorts(5); // phone n at PHONE_SIP + n
const PHONE_MEDIA = nextPorts(5);
const CARRIER = nextPort(); // takes outbound legs
const CALLEE_SINK = nextPort();
const CALLER_SINK = nextPort();
const CALLER = nextPort(); // SIPp delivering inbound calls

/**
 * Issue 6 "done when", end-user side: softphones (our own stack as the phone, Bearer phone tokens) calling each
 * other and out through the account's voice_outbound webhook, and the refusals with their reason codes.
 */
describe('e2e: end-user phones', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let other: TestAccount;
  const server = new AccountServer();
  const phones: TestPhone[] = [];
  let speech: Buffer;
  const SIP = PORTS.sip;

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, '+254711300001');
    other = await createAccountWithDid(ctx.db, '+254711300002');
    await ctx
      .db('accounts')
      .whereIn('id', [acct.id, other.id])
      .update({ webhook_status: server.url('/status') });
    // Phones send from 127.0.0.1 too, so the carrier's own calls would come from 127.0.0.2: it only takes Dial legs.
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw, ['127.0.0.2']);
    speech = speechUlaw('This is the caller speaking through the switch.');
  });

  after(async () => {
    for (const p of phones) await p.close();
    await server.close();
    await ctx?.sw.stop();
  });

  /** An end-user created and given a phone token through the REST API, with a started phone. */
  async function phone(account: TestAccount, n: number): Promise<TestPhone> {
    const user = await api(ctx.baseUrl, account.key, 'POST', '/api/users/create', {
      email: `u${n}-${account.id}@example.com`,
    });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, account.key, 'POST', '/api/phone-tokens/mint', {
      uuid: user.body.uuid,
      ttl_seconds: 600,
    });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    const p = await new TestPhone(
      user.body.extension_number,
      minted.body.token,
      account.id,
      PHONE_SIP + n,
      PHONE_MEDIA + n,
      SIP,
    ).start();
    phones.push(p);
    return p;
  }

  /** The account's newest call once it has ended (the phone may see the BYE before the CDR is closed). */
  async function lastCall(account: TestAccount) {
    const deadline = Date.now() + 10000;
    for (;;) {
      const call = (await api(ctx.baseUrl, account.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      if (call?.ended_at || Date.now() > deadline) return call;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function failsWith(p: Promise<unknown>, status: number) {
    await assert.rejects(p, (e: unknown) => e instanceof SipError && e.status === status);
  }

  it('extension to extension: registered phones are bridged through rtpengine and the callee hears the caller', async () => {
    const a = await phone(acct, 1);
    const b = await phone(acct, 2);
    assert.equal(await a.register(), 200);
    assert.equal(await b.register(), 200);
    const users = (await api(ctx.baseUrl, acct.key, 'GET', '/api/users/')).body;
    assert.ok(users.every((u: { registration_state: string }) => u.registration_state === 'registered'));
    const answered = b.answerNext();
    await a.call(b.ext);
    await answered;
    await a.speak(speech);
    await new Promise((r) => setTimeout(r, 300));
    await a.dialog!.bye();
    await server.waitFor(() => server.statusEvents().includes('CALL.0300'), 10000, 'call.completed');
    const call = await lastCall(acct);
    assert.equal(call.direction, 'internal');
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
    assert.equal(call.from_number, a.ext);
    assert.equal(call.to_number, b.ext);
    assert.ok(b.sink.speechSeconds() >= 1, `callee heard ${b.sink.speechSeconds()} s`);
  });

  it('hold and resume: a re-INVITE from one phone is offered through rtpengine to the other and answered back', async () => {
    const [a, b] = [phones[0], phones[1]];
    const answered = b.answerNext();
    await a.call(b.ext);
    await answered;
    const offersSeenByB: string[] = [];
    const onHold = (req: SipRequest, srv: Responder) => {
      offersSeenByB.push(req.text);
      srv.send(200, undefined, {
        body: b.sdp.replace('a=sendrecv', 'a=recvonly'),
        headers: { 'Content-Type': 'application/sdp' },
      });
    };
    b.dialog!.on('modify', onHold);
    const held = await a.dialog!.modify(a.sdp.replace('a=sendrecv', 'a=sendonly'));
    assert.match(offersSeenByB[0] ?? '', /a=sendonly/, 'the hold reached the other phone');
    assert.match(held ?? '', /a=recvonly/, "the other phone's answer came back");
    assert.match(held ?? '', /^c=IN IP4 127\.0\.0\.1/m, 'still anchored in rtpengine');
    // Resume: the media flows again, the caller's speech reaches the callee.
    b.dialog!.off('modify', onHold); // B answers the resume with its own SDP (sendrecv)
    b.sink.payloads.length = 0;
    await a.dialog!.modify(a.sdp);
    assert.equal(offersSeenByB.length, 1, 'the resume was answered by the phone itself, not by the hold handler');
    await a.speak(speech);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(b.sink.speechSeconds() >= 1, `after resume the callee heard ${b.sink.speechSeconds()} s`);
    await a.dialog!.bye();
  });

  it('a callee that is not registered: 480 and END.0410', async () => {
    const a = phones[0];
    const c = await phone(acct, 3); // exists, never registers
    await failsWith(a.call(c.ext), 480);
    const call = await lastCall(acct);
    assert.equal(call.reason_code, 'END.0410');
    assert.equal(call.status, 'failed');
  });

  it("another account's extension: 403 and END.0488", async () => {
    const a = phones[0];
    await failsWith(
      a.ua.createUAC(`sip:1001@${other.id}.sip.test`, {
        localSdp: a.sdp,
        from: `<sip:${a.ext}@${a.domain}>`,
        proxy: a.proxy,
        headers: { Authorization: `Bearer ${a.token}` },
      }),
      403,
    );
    const call = await lastCall(acct);
    assert.equal(call.reason_code, 'END.0488');
  });

  it('a PSTN number with no voice_outbound webhook: the notice is early media (183), then 403; END.0501, never answered nor billed', async () => {
    const a = phones[0];
    a.sink.payloads.length = 0;
    const provisional: { status: number; sdp: string }[] = [];
    await failsWith(
      a.ua.createUAC(`sip:+254722000055@${a.domain}`, {
        localSdp: a.sdp,
        from: `<sip:${a.ext}@${a.domain}>`,
        proxy: a.proxy,
        headers: { Authorization: `Bearer ${a.token}` },
        onProvisional: (res) => provisional.push({ status: res.status, sdp: res.text }),
      }),
      403,
    );
    const early = provisional.find((p) => p.status === 183);
    assert.ok(early, `a 183 came before the refusal: ${provisional.map((p) => p.status).join(',')}`);
    assert.match(early.sdp, /^m=audio \d+ RTP\/AVP/m, 'the 183 carries SDP');
    assert.ok(a.sink.speechSeconds() >= 1, `notice heard as early media: ${a.sink.speechSeconds()} s`);
    const call = await lastCall(acct);
    assert.equal(call.reason_code, 'END.0501');
    assert.equal(call.status, 'failed');
    assert.equal(call.answered_at, null);
    assert.equal(call.talk_seconds, 0);
    assert.equal(Number(call.cost), 0);
    const codes = (await ctx.db('call_events').where({ call_id: call.uuid })).map((e) => e.code);
    assert.ok(codes.includes('END.0501'), `call.no_outbound_handler is its own event: ${codes.join(',')}`);
    assert.ok(codes.includes('CALL.0183'), `call.progress for the early media: ${codes.join(',')}`);
    assert.ok(!codes.includes('CALL.0200'), `never answered: ${codes.join(',')}`);
    const charges = await ctx.db('wallet_transactions').where({ call_id: call.uuid });
    assert.equal(charges.length, 0, 'nothing billed');
  });

  it('a PSTN number through voice_outbound: the webhook gets endUser, Dial reaches the carrier, the callee hears the phone', async () => {
    server.verbs('/out', '<Response><Dial timeout="10" timeLimit="3"><Number>+254722000077</Number></Dial></Response>');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_voice_outbound: server.url('/out') });
    const callee = await new RtpSink().bind(CALLEE_SINK);
    const uas = carrier({ port: CARRIER, sink: CALLEE_SINK });
    try {
      await waitForBound(CARRIER); // SIPp's port
      const a = phones[0];
      const dialog = await a.call('254722000077');
      const ended = new Promise<void>((resolve) => dialog.once('bye', () => resolve()));
      await a.speak(speech.subarray(0, 8000 * 2));
      await ended;
      assert.equal(await uas.exited, 0, uas.output());
      const control = server.requests.find((r) => r.url === '/out')!.json;
      assert.equal(control.Direction, 'outbound');
      assert.equal(control.From, acct.did);
      assert.equal(control.To, '+254722000077');
      assert.equal(control.endUser.extension_number, a.ext);
      assert.deepEqual(Object.keys(control.endUser).sort(), ['display_name', 'email', 'extension_number', 'uuid']);
      assert.ok(callee.speechSeconds() >= 0.5, `the PSTN callee heard ${callee.speechSeconds()} s`);
    } finally {
      uas.kill();
      callee.close();
    }
  });

  it('a phone on a PSTN call (voice_outbound Dial) puts it on hold: the re-INVITE crosses to the carrier and back', async () => {
    server.verbs(
      '/out-hold',
      '<Response><Dial timeout="10" timeLimit="6"><Number>+254722000076</Number></Dial></Response>',
    );
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_voice_outbound: server.url('/out-hold') });
    const uas = carrier({ port: CARRIER, sink: CALLEE_SINK, scenario: 'uas-answer-hold.xml' });
    try {
      await waitForBound(CARRIER); // SIPp's port
      const a = phones[0];
      const dialsBefore = (await ctx.db('call_events').where({ account_id: acct.id, code: 'DIAL.0200' })).length;
      const dialog = await a.call('254722000076');
      const answered = async () =>
        (await ctx.db('call_events').where({ account_id: acct.id, code: 'DIAL.0200' })).length > dialsBefore;
      for (let i = 0; i < 100 && !(await answered()); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(await answered(), `the Dial leg was answered and bridged\n${uas.output()}`);
      const answer = await dialog.modify(a.sdp.replace('a=sendrecv', 'a=sendonly'));
      assert.match(answer ?? '', /a=recvonly/, "the carrier's answer to the hold came back to the phone");
      await new Promise<void>((resolve) => dialog.once('bye', () => resolve())); // timeLimit ends the call
      assert.equal(await uas.exited, 0, `the carrier saw the hold re-INVITE:\n${uas.output()}`);
    } finally {
      uas.kill();
    }
  });

  it('an inbound DID call Dials an extension: the registered phone rings, answers, and the caller hears it', async () => {
    const b = phones[1];
    assert.equal(await b.register(), 200);
    server.verbs(
      '/to-ext',
      `<Response><Dial timeout="10" timeLimit="4"><Extension>${b.ext}</Extension></Dial></Response>`,
    );
    await ctx
      .db('numbers')
      .where({ number: acct.did })
      .update({ webhook_voice_inbound: server.url('/to-ext') });
    const caller = await new RtpSink().bind(CALLER_SINK);
    const answered = b.answerNext();
    // The carrier sends from 127.0.0.2 (its trunk's inbound address); its media stays on 127.0.0.1.
    const sipp = runSipp([
      '127.0.0.1:' + SIP,
      '-sf',
      path.join(SCENARIOS, 'uac-inbound.xml'),
      '-key',
      'media_sink',
      String(CALLER_SINK),
      '-s',
      acct.did.slice(1),
      '-i',
      '127.0.0.2',
      '-mi',
      '127.0.0.1',
      '-p',
      String(CALLER),
      '-m',
      '1',
    ]);
    try {
      await answered;
      await b.speak(speech.subarray(0, 8000 * 2));
      assert.equal(await sipp.exited, 0, sipp.output());
      assert.ok(caller.speechSeconds() >= 0.5, `the PSTN caller heard the phone for ${caller.speechSeconds()} s`);
      const call = await lastCall(acct);
      assert.equal(call.direction, 'inbound');
      assert.equal(call.reason_code, 'END.0200');
    } finally {
      sipp.kill();
      caller.close();
    }
  });

  it('an account without an active DID: 403 and END.0403', async () => {
    const p = await phone(other, 4);
    await ctx.db('numbers').where({ account_id: other.id }).update({ is_active: false });
    await failsWith(p.call('+254722000088'), 403);
    const call = await lastCall(other);
    assert.equal(call.reason_code, 'END.0403');
  });

  it('a revoked phone token is refused at once', async () => {
    const p = phones[1];
    const tokens = await ctx.db('phone_tokens').where({ extension_number: p.ext });
    for (const t of tokens) {
      const r = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/revoke', { uuid: t.id });
      assert.equal(r.status, 200);
    }
    assert.equal(await p.register(), 403);
    await failsWith(p.call(phones[0].ext), 403);
  });
});
