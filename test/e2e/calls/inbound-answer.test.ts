import assert from 'node:assert/strict';
import { useCarrierSwitch } from '../support/carrier-switch.js';

/**
 * Issue 15, item 4: an inbound call rings (180) while its voice_inbound document is fetched and is answered only
 * when a verb needs media. A document that only hangs up, or a failed fetch with the `drop` fallback, refuses the
 * call unanswered and unbilled with a SIP status that says why (docs/api.md, "Inbound calls").
 */
describe('e2e: inbound calls ring until call control needs media', function () {
  this.timeout(60000);
  const DID = '+254711500001';
  const t = useCarrierSwitch({ did: DID, account: { fallback_mode: 'drop', fallback_value: '' } });
  const { server } = t;
  /** Never answered and never billed: no answer time, no talk, no cost, no CALL.0200, no ledger row. */
  async function assertUnansweredAndUnbilled(call: {
    uuid: string;
    status: string;
    answered_at: string | null;
    talk_seconds: number;
    cost: string;
  }) {
    assert.equal(call.status, 'failed');
    assert.equal(call.answered_at, null);
    assert.equal(call.talk_seconds, 0);
    assert.equal(Number(call.cost), 0);
    const codes = await t.eventCodes(call.uuid);
    assert.ok(codes.includes('CALL.0180'), `rang: ${codes.join(',')}`);
    assert.ok(!codes.includes('CALL.0200'), `never answered: ${codes.join(',')}`);
    assert.ok(codes.includes('CALL.0400'), `call.failed: ${codes.join(',')}`);
    const charges = await t.ctx.db('wallet_transactions').where({ call_id: call.uuid });
    assert.equal(charges.length, 0, 'nothing billed');
  }

  it('a document of only <Hangup/>: the caller hears 180, then 603 Decline; END.0603, never answered nor billed', async () => {
    server.verbs('/hangup', '<Response><Hangup/></Response>');
    await t.setInboundUrl(server.url('/hangup'));
    const before = server.requests.length;
    t.sipp = t.carrierCallsExpecting(603);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const control = server.requests.slice(before).find((r) => r.url === '/hangup')!.json;
    assert.equal(control.CallStatus, 'ringing');
    const call = await t.lastCall();
    assert.equal(call.reason_code, 'END.0603');
    await assertUnansweredAndUnbilled(call);
    assert.equal(t.sink.packets, 0, 'no media was sent to the caller');
  });

  it('a Redirect to a document that hangs up is followed while ringing: still 603, never answered', async () => {
    server.verbs('/first', `<Response><Redirect>${server.url('/hangup')}</Redirect></Response>`);
    server.verbs('/hangup', '<Response><Hangup/></Response>');
    await t.setInboundUrl(server.url('/first'));
    t.sipp = t.carrierCallsExpecting(603);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await t.lastCall();
    assert.equal(call.reason_code, 'END.0603');
    await assertUnansweredAndUnbilled(call);
  });

  it('a voice_inbound webhook that fails with the fallback drop: 500, WH.0400 (drop), END.0500, never answered nor billed', async () => {
    server.routes.set('/down', () => ({ status: 503, body: 'down for maintenance' }));
    await t.setInboundUrl(server.url('/down'));
    t.sipp = t.carrierCallsExpecting(500);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await t.lastCall();
    assert.equal(call.reason_code, 'END.0500');
    await assertUnansweredAndUnbilled(call);
    const failed = await t.ctx.db('call_events').where({ call_id: call.uuid, code: 'WH.0400' });
    assert.equal(failed.length, 1, 'webhook.failed recorded');
    assert.equal(JSON.parse(failed[0].data).fallback, 'drop');
  });

  it('a document that speaks: the 200 goes out only after the webhook answered, and the caller hears the Say', async () => {
    // The account's server takes a second to answer: the caller rings meanwhile, and billing has not started.
    server.routes.set('/slow', () => ({
      body: '<Response><Say>Thank you for waiting. This call was answered by the first verb.</Say></Response>',
      delayMs: 1000,
    }));
    await t.setInboundUrl(server.url('/slow'));
    const before = server.requests.length;
    t.sipp = t.carrierCallsExpecting();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const asked = server.requests.slice(before).find((r) => r.url === '/slow')!;
    assert.equal(asked.json.CallStatus, 'ringing');
    const call = await t.lastCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
    const answeredAt = Date.parse(call.answered_at);
    assert.ok(
      answeredAt >= asked.at + 900,
      `answered ${answeredAt - asked.at} ms after the webhook was asked (its reply took 1000 ms)`,
    );
    const codes = await t.eventCodes(call.uuid);
    assert.ok(codes.includes('CALL.0200'), `answered: ${codes.join(',')}`);
    assert.ok(t.sink.speechSeconds() >= 1.5, `heard ${t.sink.speechSeconds()} s`);
  });
});
