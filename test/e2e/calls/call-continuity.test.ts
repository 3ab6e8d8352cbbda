import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { eventually, waitForBound } from '../../support/wait.js';
import { insertCall } from '../../../store/index.js';
import {
  carrierCallsDid,
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  carrier,
  api,
  type ReceivedRequest,
  type SippRun,
  type TestAccount,
  allocateSwitchPorts,
} from '../support/harness.js';
import { nextPort } from '../../support/ports.js';

const PORTS = allocateSwitchPorts();
const SINK = nextPort();

/**
 * Issue 15, items 2, 3 and 6, through the real switch with SIPp carriers and real webhooks:
 * - a customPayload a verb document sets is carried by every later request and status callback of the call;
 * - a hangup of a record the store shows live but the switch does not hold takes the reconcile path (END.0504,
 *   settled, one terminal status callback);
 * - early media (a 183 with SDP) of an originated leg and of a Dial leg is CALL.0183 once per leg.
 */
describe('e2e: call metadata, reconciled hangup and early media', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let secret: string;
  const server = new AccountServer();
  const sipps: SippRun[] = [];
  const DID = '+254711270001';
  const CARRIER = nextPort(); // SIPp taking the switch's outbound legs
  const CALLER = nextPort(); // SIPp delivering inbound calls

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    secret = (await ctx.db('accounts').where({ id: acct.id }).first()).signing_secret;
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  afterEach(() => {
    for (const s of sipps.splice(0)) s.kill();
  });

  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  /** The spec's signature (Authentication 6), computed here from the account's secret, not by Simu's code. */
  function assertSigned(r: ReceivedRequest, p: string) {
    const ts = r.headers['x-voice-timestamp'] as string;
    const expected = createHmac('sha256', secret)
      .update(server.url(p) + ts + r.body)
      .digest('base64');
    assert.equal(r.headers['x-voice-signature'], expected, `signature of ${p}`);
  }

  const callbacksOf = (sid: string) => server.requests.filter((r) => r.url === '/status' && r.json?.sid === sid);

  async function call(uuid: string) {
    return (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body;
  }

  it('a customPayload set by an inbound document is carried, signed, by the Redirect, the Dial action and the later status callbacks', async () => {
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/cp-start') });
    // The first document sets the payload and hands over at once (no verb in between touches the call record).
    server.verbs(
      '/cp-start',
      `<Response customPayload='{"ticket":7}'><Redirect>${server.url('/cp-next')}</Redirect></Response>`,
    );
    // The second one changes it and Dials a busy callee; the action must see the current value.
    server.verbs(
      '/cp-next',
      `<Response customPayload='{"stage":"dial","ticket":8}'><Dial action="${server.url('/cp-after')}" timeout="5"><Number>+254722270002</Number></Dial></Response>`,
    );
    server.verbs('/cp-after', '<Response><Hangup/></Response>');
    const busy = carrier({ port: CARRIER, scenario: 'uas-busy.xml' });
    sipps.push(busy);
    await waitForBound(CARRIER);
    const caller = carrierCallsDid({ sip: PORTS.sip, did: DID, port: CALLER, sink: SINK });
    sipps.push(caller);
    const first = await eventually(() => server.requests.find((r) => r.url === '/cp-start'), 'the inbound request');
    const sid = first.json.CallSid as string;
    const completed = await eventually(
      () => callbacksOf(sid).find((r) => ['CALL.0300', 'CALL.0400'].includes(r.json.code)),
      'the inbound call to end',
      30000,
    );
    assert.equal(await caller.exited, 0, caller.output());

    const redirect = server.requests.find((r) => r.url === '/cp-next')!;
    assert.ok(redirect, 'the Redirect was followed');
    assert.equal(redirect.json.customPayload, '{"ticket":7}', 'the Redirect request carries the payload just set');
    assertSigned(redirect, '/cp-next');

    const action = server.requests.find((r) => r.url === '/cp-after')!;
    assert.ok(action, 'the Dial action was called');
    assert.equal(action.json.DialCallStatus, 'busy');
    assert.equal(action.json.customPayload, '{"stage":"dial","ticket":8}', 'the action carries the current payload');
    assertSigned(action, '/cp-after');

    // Every status callback of the call after the second document carries the current value.
    const mine = callbacksOf(sid);
    const dial = mine.find((r) => r.json.code === 'DIAL.0300')!;
    assert.ok(dial, mine.map((r) => r.json.code).join(','));
    for (const r of [dial, completed]) {
      assert.deepEqual(r.json.customPayload, { stage: 'dial', ticket: 8 }, r.json.code);
      assertSigned(r, '/status');
    }
    const record = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=5')).body.calls.find(
      (c: { sid: string }) => c.sid === sid,
    );
    assert.deepEqual(record.customPayload, { stage: 'dial', ticket: 8 });
  });

  it('a hangup of a record live in the store but gone from the switch is reconciled: END.0504, billed to the last heartbeat, one signed CALL.0300', async () => {
    // What a process that died with a call up leaves behind (or another node's row): the CDR answered 40 s ago and
    // the credit row its monitor last vouched for 10 s after answer. This switch never held the call.
    const now = Date.now();
    const answeredAt = new Date(now - 40_000).toISOString();
    const row = await insertCall(ctx.db, {
      account_id: acct.id,
      direction: 'outbound',
      from_number: DID,
      to_number: '+254722270003',
      status: 'answered',
      started_at: new Date(now - 45_000).toISOString(),
    });
    await ctx.db('calls').where({ id: row.id }).update({ answered_at: answeredAt });
    await ctx.db('call_credit').insert({
      call_id: row.id,
      account_id: acct.id,
      rate_cents_per_minute: 100,
      answered_at: answeredAt,
      heartbeat_at: new Date(now - 30_000).toISOString(),
    });
    const balance = async () =>
      (await ctx.db('wallet_transactions').where({ call_id: row.id })).reduce((s, r) => s + Number(r.amount_cents), 0);

    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid: row.sid });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, 'completed');
    assert.equal(res.body.reason_code, 'END.0504');
    assert.equal(res.body.talk_seconds, 10, 'talk time up to the last heartbeat, not to the hangup');
    assert.equal(res.body.cost, '1.00', 'the first minute at 1.00');
    assert.ok(res.body.duration_seconds >= 44, `duration ${res.body.duration_seconds}`);
    assert.ok(Date.parse(res.body.ended_at) >= now, 'ended_at is the detection time');
    assert.equal(await balance(), 100, 'settled in the ledger once');

    const terminal = await eventually(
      () => callbacksOf(row.sid).find((r) => r.json.code === 'CALL.0300'),
      'the CALL.0300 status callback',
    );
    assertSigned(terminal, '/status');
    assert.equal(terminal.json.data.reason_code, 'END.0504');
    assert.equal(terminal.json.data.talk_seconds, 10);
    await eventually(() => callbacksOf(row.sid).some((r) => r.json.code === 'BILL.0300'), 'the BILL.0300 callback');

    // Hangup is idempotent, and the periodic sweep finds nothing left: still one terminal event, one charge.
    const again = await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/hangup/${row.sid}`);
    assert.deepEqual(again.body, res.body);
    await new Promise((r) => setTimeout(r, 1000));
    const terminals = callbacksOf(row.sid).filter((r) => ['CALL.0300', 'CALL.0400'].includes(r.json.code));
    assert.equal(terminals.length, 1, 'one terminal status callback');
    assert.equal(await balance(), 100);
    assert.equal(await ctx.db('call_credit').where({ call_id: row.id }).first(), undefined);
  });

  it('early media (183 with SDP, sent twice) is CALL.0183 once on the originated leg and once on its Dial leg, between ringing and answer', async () => {
    server.verbs(
      '/early',
      '<Response><Dial timeLimit="1" timeout="10"><Number>+254722270005</Number></Dial><Hangup/></Response>',
    );
    const sipp = carrier({ port: CARRIER, sink: SINK, calls: 2, scenario: 'uas-early-media.xml' });
    sipps.push(sipp);
    await waitForBound(CARRIER);
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254722270004',
      from: acct.did,
      url: server.url('/early'),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const parent = res.body;
    await eventually(async () => (await call(parent.uuid)).status === 'completed', 'the call to complete', 30000);
    assert.equal(await sipp.exited, 0, sipp.output());
    const leg = await ctx.db('calls').where({ parent_call_id: parent.uuid }).first();
    assert.ok(leg, 'the Dial leg has its CDR');
    for (const sid of [parent.sid, leg.sid]) {
      await eventually(() => callbacksOf(sid).some((r) => r.json.code === 'CALL.0300'), `CALL.0300 of ${sid}`);
      const mine = callbacksOf(sid);
      const codes = mine.map((r) => r.json.code);
      assert.equal(codes.filter((c) => c === 'CALL.0183').length, 1, `${sid}: ${codes}`);
      const at = (code: string) => Date.parse(mine.find((r) => r.json.code === code)!.json.createdAt);
      assert.ok(at('CALL.0180') <= at('CALL.0183') && at('CALL.0183') <= at('CALL.0200'), `${sid}: order`);
      const progress = mine.find((r) => r.json.code === 'CALL.0183')!;
      assert.equal(progress.json.event, 'call.progress');
      assertSigned(progress, '/status');
    }
  });
});
