import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  startTestSwitch,
  createAccountWithDid,
  runSipp,
  api,
  addCarrier,
  carrier,
  AccountServer,
  RtpSink,
  SCENARIOS,
  type TestAccount,
} from '../support/harness.js';
import { waitForBound } from '../../support/wait.js';
import { TestPhone, speechUlaw } from '../support/phone.js';
import { nextPort, nextPorts } from '../../support/ports.js';

const PHONE_SIP = nextPorts(24); // phone n at PHONE_SIP + n
const PHONE_MEDIA = nextPorts(24);

/** Retries `check` (assertions) until it passes or `ms` have gone; returns what it returned. */
async function settled<T>(check: () => T | Promise<T>, ms = 10000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * scenarios/phone-refer.xml for one case: its NOTIFY block `notifies` times, then the BYE from the switch (the
 * transfer completed) or the phone's own (a refused transfer leaves it on the call). SIPp cannot loop back.
 */
function scenarioFor(dir: string, notifies: number, hangup: 'wait' | 'bye'): string {
  const text = readFileSync(path.join(SCENARIOS, 'phone-refer.xml'), 'utf8');
  const block = (name: string) => new RegExp(`<!--${name}-->\\n([\\s\\S]*?)<!--/${name}-->\\n`);
  const notify = block('NOTIFY').exec(text)![1];
  const built = text
    .replace(block('NOTIFY'), notify.repeat(notifies))
    .replace(block('SWITCH-BYE'), hangup === 'wait' ? '$1' : '')
    .replace(block('OWN-BYE'), hangup === 'bye' ? '$1' : '');
  const file = path.join(dir, `phone-refer-${notifies}-${hangup}.xml`);
  writeFileSync(file, built);
  return file;
}

/** The NOTIFYs a SIPp logged with -trace_msg: sipfrag status, Subscription-State, Event and Content-Type. */
function notifies(file: string) {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^NOTIFY \S+ SIP\/2\.0\r?\n([\s\S]*?)\r?\n\r?\n(SIP\/2\.0 (\d{3})[^\r\n]*)/gm)].map((m) => ({
    status: Number(m[3]),
    state: /^Subscription-State:\s*([^\r\n]*)/im.exec(m[1])?.[1],
    event: /^Event:\s*([^\r\n]*)/im.exec(m[1])?.[1],
    type: /^Content-Type:\s*([^\r\n]*)/im.exec(m[1])?.[1],
  }));
}

/**
 * Issue 19 item 2, transfer (RFC 3515 REFER) at the SIP level: a SIPp phone on an on-net call sends REFER, and what
 * it gets back (202, NOTIFY with message/sipfrag, the end of the implicit subscription) is read from its trace. The
 * transferee and the target are phones on our own stack with real RTP sockets (the target must hear the transferee).
 */
describe('e2e: call transfer (REFER, SIPp transferor)', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let other: TestAccount;
  const phones: TestPhone[] = [];
  const work = mkdtempSync(path.join(os.tmpdir(), 'simu-transfer-'));
  let speech: Buffer;
  const server = new AccountServer();
  const CARRIER = nextPort();
  const CARRIER_SINK = nextPort();

  before(async () => {
    ctx = await startTestSwitch();
    acct = await createAccountWithDid(ctx.db, '+254711390001');
    other = await createAccountWithDid(ctx.db, '+254711390002');
    await server.listen();
    // Phones send from 127.0.0.1, so the carrier's own calls would come from 127.0.0.2: it only takes Dial legs.
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw, ['127.0.0.2']);
    speech = speechUlaw('The caller is speaking to the person the call was transferred to.');
  });

  after(async () => {
    for (const p of phones) await p.close();
    await server.close();
    await ctx?.sw.stop();
  });

  async function endUser(account: TestAccount, n: number): Promise<{ ext: string; token: string }> {
    const user = await api(ctx.baseUrl, account.key, 'POST', '/api/users/create', {
      email: `x${n}-${account.id}@example.com`,
    });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, account.key, 'POST', '/api/phone-tokens/mint', {
      uuid: user.body.uuid,
      ttl_seconds: 600,
    });
    return { ext: user.body.extension_number, token: minted.body.token };
  }

  async function phone(account: TestAccount, n: number): Promise<TestPhone> {
    const u = await endUser(account, n);
    const p = await new TestPhone(u.ext, u.token, account.id, PHONE_SIP + n, PHONE_MEDIA + n, ctx.ports.sip);
    await p.start();
    phones.push(p);
    assert.equal(await p.register(), 200);
    return p;
  }

  /** SIPp as extension `from` calling `to` and REFERring the call to `referTo`. */
  function transferor(
    from: { ext: string; token: string },
    to: string,
    referTo: string,
    expect: { notifies: number; hangup: 'wait' | 'bye' },
  ) {
    const log = path.join(work, `sipp-${nextPort()}.log`);
    const run = runSipp([
      `127.0.0.1:${ctx.ports.sip}`,
      ...['-sf', scenarioFor(work, expect.notifies, expect.hangup)],
      ...['-s', to, '-key', 'ext', from.ext, '-key', 'token', from.token, '-key', 'domain', `${acct.id}.sip.test`],
      ...['-key', 'refer_to', referTo],
      ...['-i', '127.0.0.1', '-p', String(nextPort()), '-m', '1', '-trace_msg', '-message_file', log],
    ]);
    return { run, log };
  }

  const calls = (accountId: string) => ctx.db('calls').where({ account_id: accountId }).orderBy('created_at');
  const codes = async (callId: string) =>
    (await ctx.db('call_events').where({ call_id: callId }).orderBy('created_at')).map((e) => e.code as string);

  it('blind transfer: 202, NOTIFY 100 Trying then 200 ending the subscription; the transferee talks to the target on a new leg with parent_call_id', async () => {
    const a = await endUser(acct, 1);
    const b = await phone(acct, 2);
    const c = await phone(acct, 3);
    const bAnswered = b.answerNext();
    const cAnswered = c.answerNext();
    const { run, log } = transferor(a, b.ext, `sip:${c.ext}@${acct.id}.sip.test`, {
      notifies: 3,
      hangup: 'wait',
    });
    await bAnswered;
    await cAnswered;
    const code = await run.exited;
    assert.equal(code, 0, run.output().slice(-2000));
    const n = notifies(log);
    assert.equal(n[0]?.status, 100, JSON.stringify(n));
    assert.equal(n.at(-1)?.status, 200, JSON.stringify(n));
    assert.match(n.at(-1)?.state ?? '', /^terminated/);
    assert.match(n[0]?.state ?? '', /^active/);
    assert.ok(n.every((x) => /^refer/.test(x.event ?? '') && /^message\/sipfrag/.test(x.type ?? '')));
    // The transferee (B) speaks; the target (C) hears it through the switch.
    await b.speak(speech);
    await settled(() => assert.ok(c.sink.speechSeconds() >= 1, `target heard ${c.sink.speechSeconds()} s`));
    await b.dialog!.bye();
    const rows = await settled(async () => {
      const all = await calls(acct.id);
      assert.ok(all.length >= 2 && all.every((r) => r.ended_at), JSON.stringify(all));
      return all;
    });
    const parent = rows.find((r) => r.parent_call_id === null)!;
    const child = rows.find((r) => r.parent_call_id === parent.id)!;
    assert.ok(child, 'a new leg with parent_call_id');
    assert.equal(parent.from_number, a.ext);
    assert.equal(parent.to_number, b.ext);
    assert.equal(child.direction, 'internal');
    assert.equal(child.from_number, b.ext);
    assert.equal(child.to_number, c.ext);
    assert.equal(child.status, 'completed');
    assert.ok((await codes(parent.id)).includes('XFER.0200'));
    assert.deepEqual(await codes(child.id), ['CALL.0100', 'CALL.0180', 'CALL.0200', 'CALL.0300']);
    // The API links the new leg to the call transferred, by uuid and sid.
    const shown = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${child.id}`)).body;
    assert.deepEqual([shown.parent_call_uuid, shown.parent_call_sid], [parent.id, parent.sid], JSON.stringify(shown));
  });

  it("a Refer-To naming another account's extension is refused: NOTIFY 403, XFER.0403, the call goes on and no leg is made", async () => {
    const a = await endUser(acct, 4);
    const b = phones[0];
    const foreign = await endUser(other, 5);
    const before = (await calls(acct.id)).length;
    const answered = b.answerNext();
    const { run, log } = transferor(a, b.ext, `sip:${foreign.ext}@${other.id}.sip.test`, {
      notifies: 2,
      hangup: 'bye',
    });
    await answered;
    assert.equal(await run.exited, 0, run.output().slice(-2000));
    const n = notifies(log);
    assert.deepEqual(
      n.map((x) => x.status),
      [100, 403],
    );
    const rows = await settled(async () => {
      const all = await calls(acct.id);
      assert.equal(all.length, before + 1);
      assert.ok(all.at(-1)!.ended_at, 'the call ended');
      return all;
    });
    const call = rows.at(-1)!;
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
    const events = await ctx.db('call_events').where({ call_id: call.id, code: 'XFER.0403' });
    assert.equal(events.length, 1);
    assert.match(events[0].data, /TRANSFER_TARGET_NOT_ALLOWED/);
  });

  it('a Refer-To naming no extension of the account is refused with NOTIFY 404 (TRANSFER_TARGET_UNKNOWN)', async () => {
    const a = await endUser(acct, 6);
    const b = phones[0];
    const answered = b.answerNext();
    const { run, log } = transferor(a, b.ext, `sip:9999@${acct.id}.sip.test`, {
      notifies: 2,
      hangup: 'bye',
    });
    await answered;
    assert.equal(await run.exited, 0, run.output().slice(-2000));
    assert.deepEqual(
      notifies(log).map((x) => x.status),
      [100, 404],
    );
    const call = (await calls(acct.id)).at(-1)!;
    const events = await ctx.db('call_events').where({ call_id: call.id, code: 'XFER.0403' });
    assert.match(events[0]?.data ?? '', /TRANSFER_TARGET_UNKNOWN/);
  });

  /**
   * Attended transfer by a phone on our own stack with two calls (SIPp keeps one dialog per scenario): A calls B,
   * B calls C (the consultation call) and REFERs A's call with Replaces naming its leg of the consultation call.
   * With `referBeforeAck`, B's ACKs of the consultation call's 200 are held until the switch has answered the REFER,
   * so the switch reads the REFER first: as when that ACK is lost and sent again, or read in the same turn as the
   * REFER (the UDP front hands over the datagrams it read together). Phones `first` to `first + 2`.
   */
  async function attendedTransfer(first: number, o: { referBeforeAck: boolean }): Promise<void> {
    const a = await phone(acct, first);
    const b = await phone(acct, first + 1);
    const c = await phone(acct, first + 2);
    const bAnswered = b.answerNext();
    await a.call(b.ext);
    const x = await bAnswered; // A -> B, the call to transfer
    const held: Array<() => void> = [];
    const sendAck = b.ua.sendAck.bind(b.ua);
    if (o.referBeforeAck) b.ua.sendAck = (ack, target) => void held.push(() => sendAck(ack, target));
    const cAnswered = c.answerNext();
    const y = await b.call(c.ext); // B -> C, the consultation call
    await cAnswered;
    const notified: Array<{ status: number; state: string }> = [];
    x.on('request', (req, srv) => {
      srv.send(200);
      if (req.method !== 'NOTIFY') return;
      const status = Number(/^SIP\/2\.0 (\d{3})/.exec(req.text)?.[1]);
      notified.push({ status, state: req.headers.get('subscription-state') ?? '' });
    });
    const replaces = encodeURIComponent(`${y.callId};to-tag=${y.remoteTag};from-tag=${y.localTag}`);
    const res = await x.request('REFER', {
      headers: {
        'Refer-To': `<sip:${c.ext}@${acct.id}.sip.test?Replaces=${replaces}>`,
        'Referred-By': `<sip:${b.ext}@x>`,
      },
    });
    b.ua.sendAck = sendAck;
    for (const send of held.splice(0)) send();
    assert.equal(res.status, 202);
    await settled(() => assert.equal(notified.at(-1)?.status, 200, JSON.stringify(notified)));
    assert.equal(notified[0]?.status, 100);
    assert.match(notified.at(-1)!.state, /^terminated/);
    // Both of B's calls are over: the switch sent BYE on each.
    await settled(() => assert.deepEqual([x.state, y.state], ['terminated', 'terminated']));
    // A speaks; C, re-INVITEd into A's call, hears it.
    c.sink.payloads.length = 0; // what C heard from B in the consultation call does not count
    await a.speak(speech);
    await settled(() => assert.ok(c.sink.speechSeconds() >= 1, `target heard ${c.sink.speechSeconds()} s`));
    await a.dialog!.bye();
    const rows = await settled(async () => {
      const all = (await calls(acct.id)).slice(-3);
      assert.ok(
        all.every((r) => r.ended_at),
        JSON.stringify(all),
      );
      return all;
    });
    const parent = rows.find((r) => r.from_number === a.ext && r.to_number === b.ext)!;
    const consultation = rows.find((r) => r.from_number === b.ext && r.to_number === c.ext)!;
    const child = rows.find((r) => r.parent_call_id === parent?.id)!;
    assert.ok(parent && consultation && child, JSON.stringify(rows));
    assert.deepEqual([child.direction, child.from_number, child.to_number], ['internal', a.ext, c.ext]);
    assert.equal(consultation.reason_code, 'END.0200');
    assert.equal(child.status, 'completed');
    const parentEvents = await ctx.db('call_events').where({ call_id: parent.id, code: 'XFER.0200' });
    assert.match(parentEvents[0]?.data ?? '', /attended/);
  }

  it('attended: REFER with Replaces naming the consultation call joins the transferee to the target; the consultation call ends; a new leg with parent_call_id', () =>
    attendedTransfer(7, { referBeforeAck: false }));

  it('attended: a REFER read before the consultation call is ACKed finds it all the same (its 200 made the dialog)', () =>
    attendedTransfer(19, { referBeforeAck: true }));

  it('an INVITE with Replaces from a phone of the account takes the place of the leg it names; the other party hears it; RFC 3891 refusals', async () => {
    const a = await phone(acct, 10);
    const b = await phone(acct, 11);
    const d = await phone(acct, 12);
    const answered = b.answerNext();
    await a.call(b.ext);
    const x = await answered; // the switch's dialog with B is the one to replace
    const invite = (replaces: string) =>
      d.ua.createUAC(`sip:${b.ext}@${d.domain}`, {
        localSdp: d.sdp,
        from: `<sip:${d.ext}@${d.domain}>`,
        proxy: d.proxy,
        headers: { Authorization: `Bearer ${d.token}`, Replaces: replaces },
      });
    // RFC 3891 §3: a dialog that does not exist is 481; early-only naming a confirmed dialog is 486.
    await assert.rejects(invite(`nope@x;to-tag=1;from-tag=2`), (e: { status?: number }) => e.status === 481);
    const named = `${x.callId};to-tag=${x.localTag};from-tag=${x.remoteTag}`;
    await assert.rejects(invite(`${named};early-only`), (e: { status?: number }) => e.status === 486);
    d.dialog = await invite(named);
    await settled(() => assert.equal(x.state, 'terminated')); // B was sent BYE
    await d.speak(speech);
    await settled(() => assert.ok(a.sink.speechSeconds() >= 1, `A heard ${a.sink.speechSeconds()} s`));
    await a.dialog!.bye();
    const rows = await settled(async () => {
      const all = (await calls(acct.id)).slice(-2);
      assert.ok(
        all.every((r) => r.ended_at),
        JSON.stringify(all),
      );
      return all;
    });
    const [parent, child] = rows;
    assert.equal(child.parent_call_id, parent.id);
    assert.deepEqual([child.direction, child.from_number, child.to_number], ['internal', d.ext, a.ext]);
    assert.equal(child.status, 'completed');
    assert.ok((await codes(parent.id)).includes('XFER.0200'));
  });

  it('a phone that dialled out (voice_outbound <Dial><Number>) transfers the PSTN party to an extension: the carrier is re-INVITEd and hears the target; a new leg with parent_call_id', async () => {
    server.verbs(
      '/out',
      '<Response><Dial timeout="10" timeLimit="30"><Number>+254722000088</Number></Dial></Response>',
    );
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_voice_outbound: server.url('/out') });
    const heard = await new RtpSink().bind(CARRIER_SINK);
    const uas = carrier({ port: CARRIER, sink: CARRIER_SINK, scenario: 'uas-answer-reinvite.xml' });
    try {
      await waitForBound(CARRIER);
      const a = await phone(acct, 13);
      const c = await phone(acct, 14);
      const x = await a.call('254722000088');
      const parentRow = await settled(async () => {
        const row = (await calls(acct.id)).find((r) => r.to_number === '+254722000088' && r.parent_call_id === null);
        assert.ok(row && (await codes(row.id)).includes('DIAL.0200'), 'the Dial leg answered');
        return row;
      });
      const notified: number[] = [];
      x.on('request', (req, srv) => {
        srv.send(200);
        if (req.method === 'NOTIFY') notified.push(Number(/^SIP\/2\.0 (\d{3})/.exec(req.text)?.[1]));
      });
      const cAnswered = c.answerNext();
      const res = await x.request('REFER', { headers: { 'Refer-To': `<sip:${c.ext}@${acct.id}.sip.test>` } });
      assert.equal(res.status, 202);
      await cAnswered;
      await settled(() => assert.equal(notified.at(-1), 200, JSON.stringify(notified)));
      await settled(() => assert.equal(x.state, 'terminated')); // the transferor was sent BYE
      heard.payloads.length = 0; // what the carrier heard from A before does not count
      await c.speak(speech);
      await settled(() => assert.ok(heard.speechSeconds() >= 1, `the PSTN party heard ${heard.speechSeconds()} s`));
      await c.dialog!.bye();
      assert.equal(await uas.exited, 0, uas.output().slice(-2000));
      const rows = await settled(async () => {
        const all = (await calls(acct.id)).filter((r) => r.id === parentRow.id || r.parent_call_id === parentRow.id);
        assert.ok(all.length === 3 && all.every((r) => r.ended_at), JSON.stringify(all));
        return all;
      });
      const transferLeg = rows.find((r) => r.direction === 'internal')!;
      assert.deepEqual([transferLeg.from_number, transferLeg.to_number], ['+254722000088', c.ext]);
      assert.ok((await codes(parentRow.id)).includes('XFER.0200'));
    } finally {
      uas.kill();
      heard.close();
    }
  });

  it('blind transfer to a number: the new leg is an outbound call of the account (its DID presented, routed to the carrier, billed); the carrier hears the transferee', async () => {
    const a = await endUser(acct, 15);
    const b = await phone(acct, 16);
    const heard = await new RtpSink().bind(CARRIER_SINK);
    const uas = carrier({
      port: CARRIER,
      sink: CARRIER_SINK,
      extra: ['-trace_msg', '-message_file', path.join(work, 'carrier-number.log')],
    });
    try {
      await waitForBound(CARRIER);
      const answered = b.answerNext();
      const { run, log } = transferor(a, b.ext, `sip:0722000099@${acct.id}.sip.test`, { notifies: 3, hangup: 'wait' });
      await answered;
      assert.equal(await run.exited, 0, run.output().slice(-2000));
      assert.deepEqual(
        notifies(log).map((x) => x.status),
        [100, 180, 200],
      );
      // The carrier got the number in E.164, from the account's DID.
      const invite = readFileSync(path.join(work, 'carrier-number.log'), 'utf8');
      assert.match(invite, /^INVITE sip:\+?254722000099@/m);
      assert.match(invite, new RegExp(`^From:.*${acct.did.replace('+', '\\+')}`, 'm'));
      await b.speak(speech);
      await settled(() => assert.ok(heard.speechSeconds() >= 1, `the carrier heard ${heard.speechSeconds()} s`));
      await b.dialog!.bye();
      assert.equal(await uas.exited, 0, uas.output().slice(-2000));
      const child = await settled(async () => {
        const row = (await calls(acct.id)).find((r) => r.to_number === '+254722000099');
        assert.ok(row?.ended_at, JSON.stringify(row));
        return row;
      });
      assert.deepEqual([child.direction, child.from_number, child.status], ['outbound', acct.did, 'completed']);
      assert.ok(child.parent_call_id);
      assert.ok(child.talk_seconds >= 1, `talk_seconds ${child.talk_seconds}`);
    } finally {
      uas.kill();
      heard.close();
    }
  });

  it('a number refused by admission (no balance left): NOTIFY 402, XFER.0403 with BILL.0402, never dialled', async () => {
    const a = await endUser(acct, 17);
    const b = await phone(acct, 18);
    const answered = b.answerNext();
    try {
      const { run, log } = transferor(a, b.ext, `sip:0722000098@${acct.id}.sip.test`, { notifies: 2, hangup: 'bye' });
      await answered;
      // The call is up (admitted); the balance is gone before the REFER comes (the phone waits 1 s after its ACK).
      await ctx.db('accounts').where({ id: acct.id }).update({ balance_cents: 0 });
      assert.equal(await run.exited, 0, run.output().slice(-2000));
      assert.deepEqual(
        notifies(log).map((x) => x.status),
        [100, 402],
      );
      const call = (await calls(acct.id)).at(-1)!;
      const events = await ctx.db('call_events').where({ call_id: call.id, code: 'XFER.0403' });
      assert.match(events[0]?.data ?? '', /BILL\.0402/);
      assert.equal((await calls(acct.id)).filter((r) => r.to_number === '+254722000098').length, 0);
    } finally {
      await ctx.db('accounts').where({ id: acct.id }).update({ balance_cents: 100_000 });
    }
  });
});
