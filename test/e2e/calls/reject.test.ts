import assert from 'node:assert/strict';
import { useCarrierSwitch } from '../support/carrier-switch.js';

/**
 * Issue 16, item 4: <Reject reason="busy|rejected"> refuses a ringing inbound call with 486 or 603, never answered
 * nor billed; a document that Rejects a call already answered is a document error (fallback, WH.0400).
 */
describe('e2e: Reject refuses an inbound call unanswered (SIPp carrier)', function () {
  this.timeout(60000);
  const DID = '+254711700001';
  const t = useCarrierSwitch({ did: DID, account: { fallback_mode: 'drop', fallback_value: '' } });
  const { server } = t;

  async function answerWith(xml: string) {
    server.verbs('/in', xml);
    await t.setInboundUrl(server.url('/in'));
  }

  async function assertRefusedUnbilled(reason: string) {
    const call = await t.lastCall();
    assert.equal(call.status, 'failed');
    assert.equal(call.reason_code, reason);
    assert.equal(call.answered_at, null);
    assert.equal(call.talk_seconds, 0);
    assert.equal(Number(call.cost), 0);
    const codes = await t.eventCodes(call.uuid);
    assert.ok(!codes.includes('CALL.0200'), `never answered: ${codes.join(',')}`);
    assert.ok(codes.includes('CALL.0400'), `call.failed: ${codes.join(',')}`);
    assert.equal((await t.ctx.db('wallet_transactions').where({ call_id: call.uuid })).length, 0, 'nothing billed');
    assert.equal(t.sink.packets, 0, 'no media reached the caller');
  }

  it('<Reject reason="busy"/>: 486 Busy Here, END.0486, never answered nor billed', async () => {
    await answerWith('<Response><Reject reason="busy"/><Say>never spoken</Say></Response>');
    t.sipp = t.carrierCallsExpecting(486);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    await assertRefusedUnbilled('END.0486');
  });

  it('<Reject/> (reason rejected, the default): 603 Decline, END.0603, never answered nor billed', async () => {
    await answerWith('<Response><Reject/></Response>');
    t.sipp = t.carrierCallsExpecting(603);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    await assertRefusedUnbilled('END.0603');
  });

  it('a Reject reached after the call was answered is a document error: WH.0400 invalid_document, the fallback', async () => {
    server.verbs('/late', '<Response><Reject reason="busy"/></Response>');
    await answerWith(`<Response><Say>Hello.</Say><Redirect>${server.url('/late')}</Redirect></Response>`);
    t.sipp = t.carrierCallsExpecting(); // answered, then hung up by the fallback (drop)
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await t.lastCall();
    assert.equal(call.status, 'completed');
    const failed = await t.ctx.db('call_events').where({ call_id: call.uuid, code: 'WH.0400' });
    assert.equal(failed.length, 1, 'webhook.failed recorded');
    assert.equal(JSON.parse(failed[0].data).reason, 'invalid_document');
  });
});
