/**
 * Issue 19, item 1: a call to an extension rings every registered phone of it at once (the first to answer wins,
 * the others get CANCEL with `Reason: SIP;cause=200;text="Call completed elsewhere"`, a busy phone does not end the
 * call), and <Dial> rings several <Number>/<Extension> nouns at once or, with sequential="true", in order. The
 * phones are our stack's TestPhone (real SIP and RTP over UDP) and SIPp UASes whose binding the test registers
 * from their port; the trunks are SIPp UASes.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { insertRoute } from '../../../store/index.js';
import { waitForBound, eventually } from '../../support/wait.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  RtpSink,
  carrier,
  runSipp,
  SCENARIOS,
  api,
  allocateSwitchPorts,
  type TestAccount,
} from '../support/harness.js';
import { TestPhone, speechUlaw } from '../support/phone.js';
import { nextPort, nextPorts } from '../../support/ports.js';

const PORTS = allocateSwitchPorts();
const SIP_PORTS = nextPorts(16);
const MEDIA_PORTS = nextPorts(16);
const TRUNK_A = nextPort();
const TRUNK_B = nextPort();
const SINK = nextPort();
const CALLER = nextPort();

describe('e2e: forking to every phone of an extension, Dial with several targets', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  const phones: TestPhone[] = [];
  let speech: Buffer;
  let slot = 0;
  const work = mkdtempSync(path.join(os.tmpdir(), 'simu-forking-'));

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, '+254711900001');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    // Phones send from 127.0.0.1, so the trunks' own calls would come from 127.0.0.2: they only take Dial legs.
    const a = await addCarrier(ctx.db, TRUNK_A, 'trunk-a', ctx.sw, ['127.0.0.2']);
    const b = await addCarrier(ctx.db, TRUNK_B, 'trunk-b', ctx.sw, ['127.0.0.3']);
    await insertRoute(ctx.db, { prefix: '25472', trunk_id: a.id, priority: 0, weight: 1, buy_rate_cents: 0 });
    await insertRoute(ctx.db, { prefix: '25473', trunk_id: b.id, priority: 0, weight: 1, buy_rate_cents: 0 });
    speech = speechUlaw('This is the caller speaking through the switch.');
  });

  after(async () => {
    for (const p of phones) await p.close();
    await server.close();
    await ctx?.sw.stop();
  });

  /** A new end-user of the account with a phone token. */
  async function endUser(): Promise<{ ext: string; token: string }> {
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', {
      email: `u${slot}-${Date.now()}@example.com`,
    });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', {
      uuid: user.body.uuid,
      ttl_seconds: 600,
    });
    return { ext: user.body.extension_number, token: minted.body.token };
  }

  /** A started (and registered) TestPhone of the end-user. */
  async function phone(u: { ext: string; token: string }): Promise<TestPhone> {
    const n = slot++;
    const p = await new TestPhone(u.ext, u.token, acct.id, SIP_PORTS + n, MEDIA_PORTS + n, PORTS.sip).start();
    phones.push(p);
    assert.equal(await p.register(), 200);
    return p;
  }

  /**
   * A SIPp phone of the end-user running `scenario`: its binding is registered from the very port SIPp then
   * listens on (the switch sends a phone's INVITEs to where its REGISTER came from).
   */
  async function sippPhone(u: { ext: string; token: string }, scenario: string) {
    const n = slot++;
    const registrar = await new TestPhone(u.ext, u.token, acct.id, SIP_PORTS + n, MEDIA_PORTS + n, PORTS.sip).start();
    assert.equal(await registrar.register(), 200);
    await registrar.close();
    const log = path.join(work, `phone-${n}.log`);
    const run = carrier({ port: SIP_PORTS + n, scenario, extra: ['-trace_msg', '-message_file', log] });
    await waitForBound(SIP_PORTS + n).catch((e: Error) => {
      throw new Error(`${e.message}: ${run.output()}`);
    });
    return { run, log };
  }

  async function lastCall(direction: string) {
    return eventually(async () => {
      const row = await ctx
        .db('calls')
        .where({ account_id: acct.id, direction })
        .whereNull('parent_call_id')
        .orderBy('created_at', 'desc')
        .first();
      return row?.ended_at ? row : undefined;
    }, `the ${direction} call's end`);
  }

  it('two phones of one extension ring; the one that answers hears the caller, the other gets CANCEL with the Reason', async () => {
    const callee = await endUser();
    const caller = await phone(await endUser());
    const answering = await phone(callee);
    const ringing = await sippPhone(callee, 'phone-ring.xml');
    const answered = answering.answerNext(600); // rings 0.6 s: both phones are ringing before it answers
    await caller.call(callee.ext);
    await answered;
    assert.equal(await ringing.run.exited, 0, `the ringing phone: ${ringing.run.output()}`);
    const trace = readFileSync(ringing.log, 'utf8');
    assert.match(trace, /^CANCEL sip:/m, 'the ringing phone got a CANCEL');
    assert.match(trace, /^Reason: SIP;cause=200;text="Call completed elsewhere"/im);
    await caller.speak(speech.subarray(0, 8000 * 2));
    await new Promise((r) => setTimeout(r, 300));
    await caller.dialog!.bye();
    assert.ok(answering.sink.speechSeconds() >= 1, `the answering phone heard ${answering.sink.speechSeconds()} s`);
    const call = await lastCall('internal');
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
  });

  it('a busy phone (486) does not end the call: the other phone of the extension answers', async () => {
    const callee = await endUser();
    const caller = await phone(await endUser());
    const busy = await sippPhone(callee, 'phone-busy.xml');
    const answering = await phone(callee);
    const answered = answering.answerNext(800); // answers well after the busy phone said 486
    await caller.call(callee.ext);
    await answered;
    assert.equal(await busy.run.exited, 0, `the busy phone: ${busy.run.output()}`);
    assert.match(readFileSync(busy.log, 'utf8'), /^SIP\/2\.0 486 Busy Here/m);
    await caller.speak(speech.subarray(0, 8000));
    await caller.dialog!.bye();
    assert.ok(answering.sink.speechSeconds() >= 0.5, `the answering phone heard ${answering.sink.speechSeconds()} s`);
    const call = await lastCall('internal');
    assert.equal(call.reason_code, 'END.0200');
  });

  it('every phone busy: the caller gets 486 and the call ends busy', async () => {
    const callee = await endUser();
    const caller = await phone(await endUser());
    const one = await sippPhone(callee, 'phone-busy.xml');
    const two = await sippPhone(callee, 'phone-busy.xml');
    await assert.rejects(caller.call(callee.ext), (e: { status?: number }) => e.status === 486);
    assert.equal(await one.run.exited, 0, one.run.output());
    assert.equal(await two.run.exited, 0, two.run.output());
    const call = await lastCall('internal');
    assert.equal(call.reason_code, 'END.0486');
  });

  /** An inbound DID call whose document is `xml`; resolves with the child legs' CDRs once the call has ended. */
  async function inboundDial(xml: string) {
    server.verbs('/dial', xml);
    await ctx
      .db('numbers')
      .where({ number: acct.did })
      .update({ webhook_voice_inbound: server.url('/dial') });
    const sink = await new RtpSink().bind(SINK);
    // The caller is trunk-a's (it sends from 127.0.0.2); its media stays on 127.0.0.1.
    const sipp = runSipp([
      `127.0.0.1:${PORTS.sip}`,
      ...['-sf', path.join(SCENARIOS, 'uac-inbound.xml'), '-key', 'media_sink', String(SINK)],
      ...['-s', acct.did.slice(1), '-i', '127.0.0.2', '-mi', '127.0.0.1', '-p', String(CALLER), '-m', '1'],
    ]);
    try {
      assert.equal(await sipp.exited, 0, sipp.output());
    } finally {
      sink.close();
    }
    const parent = await lastCall('inbound');
    const legs = await eventually(async () => {
      const rows = await ctx.db('calls').where({ parent_call_id: parent.id }).orderBy('created_at');
      return rows.every((r) => r.ended_at) ? rows : undefined;
    }, "the legs' end");
    return { parent, legs };
  }

  it('Dial with two Numbers rings both trunks at once: one answers, the other gets CANCEL; only the answered leg is billed', async () => {
    const answer = carrier({ port: TRUNK_A, scenario: 'uas-answer.xml', sink: SINK });
    const ringLog = path.join(work, 'trunk-b.log');
    const ring = carrier({ port: TRUNK_B, scenario: 'uas-ring.xml', extra: ['-trace_msg', '-message_file', ringLog] });
    await waitForBound(TRUNK_A);
    await waitForBound(TRUNK_B);
    const { legs } = await inboundDial(
      '<Response><Dial timeout="10" timeLimit="2"><Number>+254720000001</Number><Number>+254730000001</Number></Dial></Response>',
    );
    assert.equal(await ring.exited, 0, ring.output());
    assert.match(readFileSync(ringLog, 'utf8'), /^Reason: SIP;cause=200;text="Call completed elsewhere"/im);
    answer.kill();
    assert.equal(legs.length, 2, 'each Number is its own leg');
    const won = legs.find((l) => l.to_number === '+254720000001')!;
    const lost = legs.find((l) => l.to_number === '+254730000001')!;
    assert.equal(won.status, 'completed');
    assert.equal(won.reason_code, 'END.0200');
    assert.equal(lost.answered_at, null);
    assert.equal(lost.reason_code, 'END.0487', JSON.stringify(lost));
    assert.equal(Number(lost.cost_cents ?? 0), 0);
    assert.equal(await ctx.db('wallet_transactions').where({ call_id: lost.id }).first(), undefined);
    const live = await ctx.db('calls').where({ account_id: acct.id }).whereNull('ended_at');
    assert.deepEqual(live, [], 'no leg is left live (no credit held)');
    assert.ok(server.statusEvents().includes('DIAL.0200'));
  });

  it('Dial sequential="true" tries the second Number after the first is busy', async () => {
    const busyLog = path.join(work, 'seq-a.log');
    const busy = carrier({ port: TRUNK_A, scenario: 'uas-busy.xml', extra: ['-trace_msg', '-message_file', busyLog] });
    const answer = carrier({ port: TRUNK_B, scenario: 'uas-answer.xml', sink: SINK });
    await waitForBound(TRUNK_A);
    await waitForBound(TRUNK_B);
    const { legs } = await inboundDial(
      '<Response><Dial sequential="true" timeout="5" timeLimit="2">' +
        '<Number>+254720000002</Number><Number>+254730000002</Number></Dial></Response>',
    );
    assert.equal(await busy.exited, 0, busy.output());
    answer.kill();
    assert.deepEqual(
      legs.map((l) => [l.to_number, l.reason_code]),
      [
        ['+254720000002', 'END.0486'],
        ['+254730000002', 'END.0200'],
      ],
    );
    assert.ok(Date.parse(legs[1].started_at) >= Date.parse(legs[0].ended_at), 'the second leg started after the first');
  });

  it('a phone whose 2xx crosses the CANCEL is ACKed and hung up; the call stays with the phone that answered first', async () => {
    const callee = await endUser();
    const caller = await phone(await endUser());
    const answering = await phone(callee);
    const late = await sippPhone(callee, 'phone-late-answer.xml');
    const answered = answering.answerNext(600);
    await caller.call(callee.ext);
    await answered;
    assert.equal(await late.run.exited, 0, `the late phone got no ACK and BYE: ${late.run.output()}`);
    const trace = readFileSync(late.log, 'utf8');
    assert.match(trace, /^ACK sip:/m);
    assert.match(trace, /^BYE sip:/m);
    await caller.speak(speech.subarray(0, 8000));
    await caller.dialog!.bye();
    assert.ok(answering.sink.speechSeconds() >= 0.5, `the answering phone heard ${answering.sink.speechSeconds()} s`);
    assert.equal((await lastCall('internal')).reason_code, 'END.0200');
  });

  it('an inbound DID call that Dials an extension rings every phone of it', async () => {
    const callee = await endUser();
    const answering = await phone(callee);
    const ringing = await sippPhone(callee, 'phone-ring.xml');
    const answered = answering.answerNext(600);
    const { parent, legs } = await inboundDial(
      `<Response><Dial timeout="10" timeLimit="2"><Extension>${callee.ext}</Extension></Dial></Response>`,
    );
    await answered;
    assert.equal(await ringing.run.exited, 0, ringing.run.output());
    assert.match(readFileSync(ringing.log, 'utf8'), /^Reason: SIP;cause=200;text="Call completed elsewhere"/im);
    assert.equal(parent.reason_code, 'END.0200');
    assert.deepEqual(legs, [], 'an extension is no leg of its own (not billed)');
  });

  it('Dial with an Extension and a Number at once: the number answers, the phone gets the CANCEL, one leg billed', async () => {
    const callee = await endUser();
    const ringing = await sippPhone(callee, 'phone-ring.xml');
    const answer = carrier({ port: TRUNK_A, scenario: 'uas-answer.xml', sink: SINK });
    await waitForBound(TRUNK_A);
    const { parent, legs } = await inboundDial(
      `<Response><Dial timeout="10" timeLimit="2"><Extension>${callee.ext}</Extension>` +
        '<Number>+254720000003</Number></Dial></Response>',
    );
    answer.kill();
    assert.equal(await ringing.run.exited, 0, ringing.run.output());
    assert.match(readFileSync(ringing.log, 'utf8'), /^Reason: SIP;cause=200;text="Call completed elsewhere"/im);
    assert.deepEqual(
      legs.map((l) => [l.to_number, l.reason_code]),
      [['+254720000003', 'END.0200']],
    );
    const dial = await ctx.db('call_events').where({ call_id: parent.id, code: 'DIAL.0300' }).first();
    assert.equal(JSON.parse(dial.data).DialCallStatus, 'completed');
  });
});
