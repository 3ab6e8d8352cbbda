import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort } from '../support/ports.js';
import {
  AccountServer,
  RtpSink,
  SCENARIOS,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
  type SippRun,
  type TestAccount,
} from './harness.js';

const PORTS = allocateSwitchPorts();
const SINK = nextPort();
const CARRIER = nextPort();
const CALLER = nextPort();

/**
 * Issue 16, item 4: <Reject reason="busy|rejected"> refuses a ringing inbound call with 486 or 603, never answered
 * nor billed; a document that Rejects a call already answered is a document error (fallback, WH.0400).
 */
describe('e2e: Reject refuses an inbound call unanswered (SIPp carrier)', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  let sink: RtpSink;
  let sipp: SippRun | undefined;
  const DID = '+254711700001';
  const scenarios = mkdtempSync(path.join(os.tmpdir(), 'simu-reject-'));

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status'), fallback_mode: 'drop', fallback_value: '' });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  beforeEach(async () => {
    sink = await new RtpSink().bind(SINK);
  });

  afterEach(() => {
    sipp?.kill();
    sink.close();
  });

  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  async function answerWith(xml: string) {
    server.verbs('/in', xml);
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/in') });
  }

  /** The carrier's call, expecting 180 then `status` (scenarios/uac-inbound-refused.xml), or answered and BYEd. */
  function carrierCalls(status?: number) {
    let scenario = 'uac-inbound.xml';
    if (status !== undefined) {
      scenario = path.join(scenarios, `refused-${status}.xml`);
      const template = readFileSync(path.join(SCENARIOS, 'uac-inbound-refused.xml'), 'utf8');
      writeFileSync(scenario, template.replace('response="EXPECTED_STATUS"', `response="${status}"`));
    }
    return carrierCallsDid({ sip: PORTS.sip, did: DID, port: CALLER, sink: SINK, scenario });
  }

  async function lastCall() {
    const deadline = Date.now() + 10000;
    for (;;) {
      const call = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      if (call?.ended_at || Date.now() > deadline) return call;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function eventCodes(callId: string): Promise<string[]> {
    return (await ctx.db('call_events').where({ call_id: callId })).map((e: { code: string }) => e.code);
  }

  async function assertRefusedUnbilled(reason: string) {
    const call = await lastCall();
    assert.equal(call.status, 'failed');
    assert.equal(call.reason_code, reason);
    assert.equal(call.answered_at, null);
    assert.equal(call.talk_seconds, 0);
    assert.equal(Number(call.cost), 0);
    const codes = await eventCodes(call.uuid);
    assert.ok(!codes.includes('CALL.0200'), `never answered: ${codes.join(',')}`);
    assert.ok(codes.includes('CALL.0400'), `call.failed: ${codes.join(',')}`);
    assert.equal((await ctx.db('wallet_transactions').where({ call_id: call.uuid })).length, 0, 'nothing billed');
    assert.equal(sink.packets, 0, 'no media reached the caller');
  }

  it('<Reject reason="busy"/>: 486 Busy Here, END.0486, never answered nor billed', async () => {
    await answerWith('<Response><Reject reason="busy"/><Say>never spoken</Say></Response>');
    sipp = carrierCalls(486);
    assert.equal(await sipp.exited, 0, sipp.output());
    await assertRefusedUnbilled('END.0486');
  });

  it('<Reject/> (reason rejected, the default): 603 Decline, END.0603, never answered nor billed', async () => {
    await answerWith('<Response><Reject/></Response>');
    sipp = carrierCalls(603);
    assert.equal(await sipp.exited, 0, sipp.output());
    await assertRefusedUnbilled('END.0603');
  });

  it('a Reject reached after the call was answered is a document error: WH.0400 invalid_document, the fallback', async () => {
    server.verbs('/late', '<Response><Reject reason="busy"/></Response>');
    await answerWith(`<Response><Say>Hello.</Say><Redirect>${server.url('/late')}</Redirect></Response>`);
    sipp = carrierCalls(); // answered, then hung up by the fallback (drop)
    assert.equal(await sipp.exited, 0, sipp.output());
    const call = await lastCall();
    assert.equal(call.status, 'completed');
    const failed = await ctx.db('call_events').where({ call_id: call.uuid, code: 'WH.0400' });
    assert.equal(failed.length, 1, 'webhook.failed recorded');
    assert.equal(JSON.parse(failed[0].data).reason, 'invalid_document');
  });
});
