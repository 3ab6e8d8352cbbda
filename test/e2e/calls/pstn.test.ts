import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  RtpSink,
  carrier,
  api,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';

/**
 * Issue 6 "done when": originate → Say → Hangup, with SIPp as the carrier and a real RTP receiver behind it.
 * Asserts the CDR, the events and what the far end heard.
 */
describe('e2e: API originate, Say, Hangup through a SIPp carrier', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  const sink = new RtpSink();
  let sipp: SippRun | undefined;
  const CARRIER = nextPort();
  const SINK = nextPort();

  before(async () => {
    ctx = await startTestSwitch();
    await server.listen();
    await sink.bind(SINK);
    acct = await createAccountWithDid(ctx.db, '+254711100001');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  after(async () => {
    sipp?.kill();
    sink.close();
    await server.close();
    await ctx?.sw.stop();
  });

  it('dials the carrier, speaks on answer, hangs up, and the CDR and events say so', async () => {
    server.verbs(
      '/voice',
      '<Response><Say>Hello from Simu. This is a test of the speech path.</Say><Hangup/></Response>',
    );
    sipp = carrier({ port: CARRIER, sink: SINK });
    await waitForBound(CARRIER); // SIPp's port
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254722000001',
      from: acct.did,
      url: server.url('/voice'),
      customPayload: { order: 42 },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const uuid = res.body.uuid;
    assert.equal(res.body.status, 'initiated');

    await server.waitFor(() => server.statusEvents().includes('CALL.0300'), 30000, 'call.completed');
    assert.equal(await sipp.exited, 0, sipp.output());

    const call = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body;
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
    assert.equal(call.reason_label, 'Normal hangup');
    assert.equal(call.direction, 'outbound');
    assert.ok(call.answered_at && call.ended_at && call.started_at, JSON.stringify(call));
    assert.ok(call.tts_seconds >= 2, `tts_seconds ${call.tts_seconds}`);
    assert.ok(call.talk_seconds >= 2, `talk_seconds ${call.talk_seconds}`);

    // Billing: the CDR's cost is what the ledger took for this call, once.
    const ledger = await ctx.db('wallet_transactions').where({ call_id: uuid });
    const ledgerCents = ledger.reduce((sum, r) => sum + Number(r.amount_cents), 0);
    assert.ok(ledgerCents >= 100, `at least the first minute at 1.00: ${ledgerCents}`);
    assert.equal(call.cost, (ledgerCents / 100).toFixed(2));

    // The far end heard speech for about as long as the utterance.
    const heard = sink.speechSeconds();
    assert.ok(heard >= 1.5, `speech-level audio received: ${heard.toFixed(2)} s`);

    // The call-control request: the spec's fields, signed as the spec says.
    const control = server.requests.find((r) => r.url === '/voice')!;
    assert.deepEqual(Object.keys(control.json).sort(), [
      'AccountSid',
      'CallSid',
      'CallStatus',
      'Direction',
      'From',
      'To',
      'customPayload',
    ]);
    assert.equal(control.json.CallStatus, 'in-progress');
    assert.equal(control.json.Direction, 'outbound');
    assert.equal(control.json.CallSid, call.sid);
    assert.equal(control.json.customPayload, '{"order":42}');
    const secret = (await ctx.db('accounts').where({ id: acct.id }).first()).signing_secret;
    const ts = control.headers['x-voice-timestamp'] as string;
    const expected = createHmac('sha256', secret)
      .update(server.url('/voice') + ts + control.body)
      .digest('base64');
    assert.equal(control.headers['x-voice-signature'], expected);

    // Status callbacks in order for the call.
    const codes = server.statusEvents();
    for (const c of ['CALL.0100', 'CALL.0180', 'CALL.0200', 'TTS.0200', 'BILL.0300', 'CALL.0300'])
      assert.ok(codes.includes(c), `${c} in ${codes}`);
    assert.ok(
      codes.indexOf('CALL.0100') < codes.indexOf('CALL.0200') &&
        codes.indexOf('CALL.0200') < codes.indexOf('CALL.0300'),
    );
    const completed = server.requests.find((r) => r.json?.code === 'CALL.0300')!.json;
    assert.equal(completed.data.reason_code, 'END.0200');
    assert.deepEqual(completed.customPayload, { order: 42 });
  });

  async function originate(to: string, url: string) {
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to,
      from: acct.did,
      url,
      timeout: 2,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.uuid as string;
  }

  async function waitEnded(uuid: string) {
    let call: any;
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      call = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body;
      if (call.status === 'completed' || call.status === 'failed') return call;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`call did not end: ${JSON.stringify(call)}`);
  }

  it('Dial on an originated call bridges a second PSTN leg, then the action document plays to the first (click-to-call)', async () => {
    server.verbs(
      '/click',
      `<Response><Dial action="${server.url('/click-after')}" timeLimit="2"><Number>+254722000011</Number></Dial></Response>`,
    );
    server.verbs('/click-after', '<Response><Say>Your call has ended. Goodbye from Simu.</Say><Hangup/></Response>');
    // One SIPp carrier answers both legs: the one the API places and the one the Dial places.
    sipp = carrier({ port: CARRIER, sink: SINK, calls: 2 });
    await waitForBound(CARRIER); // SIPp's port
    const before = server.requests.length;
    const uuid = await originate('+254722000010', server.url('/click'));
    await server.waitFor(() => server.requests.slice(before).some((r) => r.url === '/click-after'), 20000, 'action');
    sink.payloads.length = 0; // neither SIPp leg sends audio: what arrives now is the action's Say to the first leg
    const call = await waitEnded(uuid);
    assert.equal(await sipp.exited, 0, sipp.output());
    assert.equal(call.status, 'completed');
    const after = server.requests.slice(before).find((r) => r.url === '/click-after')!.json;
    assert.equal(after.DialCallStatus, 'completed');
    assert.ok(after.DialCallDuration >= 1 && after.DialCallDuration <= 3, `DialCallDuration ${after.DialCallDuration}`);
    const codes = server.requests.slice(before).map((r) => r.json?.code);
    assert.ok(codes.includes('DIAL.0200') && codes.includes('DIAL.0300'), codes.join(','));
    assert.ok(sink.speechSeconds() >= 1.5, `the first leg heard the action's Say for ${sink.speechSeconds()} s`);
    const leg = await ctx.db('calls').where({ parent_call_id: uuid }).first();
    assert.equal(leg.to_number, '+254722000011');
    assert.equal(leg.status, 'completed');
    // The API links the leg to the call that dialled it, by uuid and sid.
    const legCall = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${leg.id}`)).body;
    assert.equal(legCall.parent_call_uuid, uuid, JSON.stringify(legCall));
    assert.equal(legCall.parent_call_sid, call.sid, JSON.stringify(legCall));
    assert.equal(call.parent_call_uuid, null, 'the originated call is no leg');
    assert.equal(call.parent_call_sid, null);
    const listed = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=5')).body.calls;
    assert.equal(listed.find((c: { uuid: string }) => c.uuid === leg.id)?.parent_call_sid, call.sid, 'in the list too');
  });

  it('a busy callee ends the call as failed with END.0486', async () => {
    sipp = carrier({ port: CARRIER, scenario: 'uas-busy.xml' });
    await waitForBound(CARRIER); // SIPp's port
    const call = await waitEnded(await originate('+254722000002', server.url('/voice')));
    assert.equal(call.status, 'failed');
    assert.equal(call.reason_code, 'END.0486');
    assert.equal(call.answered_at, null);
    assert.equal(await sipp.exited, 0, sipp.output());
  });

  it('no answer within the timeout CANCELs the INVITE and ends with END.0480', async () => {
    sipp = carrier({ port: CARRIER, scenario: 'uas-ring.xml' });
    await waitForBound(CARRIER); // SIPp's port
    const call = await waitEnded(await originate('+254722000003', server.url('/voice')));
    assert.equal(call.reason_code, 'END.0480');
    assert.equal(call.status, 'failed');
    assert.equal(await sipp.exited, 0, sipp.output());
  });

  it('an API hangup while ringing CANCELs the INVITE and ends with END.0487', async () => {
    sipp = carrier({ port: CARRIER, scenario: 'uas-ring.xml' });
    await waitForBound(CARRIER); // SIPp's port
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254722000004',
      from: acct.did,
      url: server.url('/voice'),
      timeout: 20,
    });
    // Hang up once the carrier rings (a fixed 500 ms could still be before the INVITE on a loaded box).
    await eventually(
      async () => (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${res.body.uuid}`)).body.status === 'ringing',
      'the call to ring',
    );
    const hung = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid: res.body.sid });
    assert.equal(hung.status, 200);
    const call = await waitEnded(res.body.uuid);
    assert.equal(call.reason_code, 'END.0487');
    assert.equal(await sipp.exited, 0, sipp.output());
  });

  it('an originate to a platform-blocked range is refused before dialling: 403, no call, no charge', async () => {
    await ctx.db('destination_rules').insert({
      id: crypto.randomUUID(),
      account_id: null,
      kind: 'block',
      prefix: '2549',
      created_at: new Date().toISOString(),
    });
    const before = (await ctx.db('calls').where({ account_id: acct.id })).length;
    const ledgerBefore = (await ctx.db('wallet_transactions').where({ account_id: acct.id })).length;
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254900000001',
      from: acct.did,
      url: server.url('/voice'),
    });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'DESTINATION_BLOCKED');
    assert.match(res.body.detail, /blocks \(prefix \+2549\)/);
    assert.equal((await ctx.db('calls').where({ account_id: acct.id })).length, before);
    assert.equal((await ctx.db('wallet_transactions').where({ account_id: acct.id })).length, ledgerBefore);
    await ctx.db('destination_rules').whereNull('account_id').delete();
  });
});
