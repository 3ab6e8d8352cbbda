import assert from 'node:assert/strict';
import { useCarrierSwitch } from '../support/carrier-switch.js';

/**
 * Issue 23, item 4, "done when": a number's webhook that answered once and then goes down still serves the
 * number's callers from its last good document; the CDR (served_from) and the stream (WH.0400 with fallback
 * last_good) say so. A document that named the caller (per-call state) is never kept: then the fallback runs.
 */
describe('e2e: the last known good document', function () {
  this.timeout(60000);
  const DID = '+254711240001';
  const t = useCarrierSwitch({
    did: DID,
    env: { SIMU_WEBHOOK_TIMEOUT_MS: '1000' },
    account: { last_good_document: 1, fallback_mode: 'message', fallback_value: 'Sorry.' },
  });

  async function callAndCdr() {
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await t.lastCall();
    return { call, row: await t.ctx.db('calls').where({ id: call.uuid }).first() };
  }

  async function wh0400(callId: string) {
    const rows = await t.ctx.db('call_events').where({ call_id: callId, code: 'WH.0400' });
    return rows.map((r: { data: string }) => JSON.parse(r.data));
  }

  it('a webhook that answered once and then fails (500, then a timeout) still serves the callers', async () => {
    t.server.verbs('/lg', '<Response><Say>Welcome to the shop. We are open from eight.</Say><Hangup/></Response>');
    await t.setInboundUrl(t.server.url('/lg'));
    const first = await callAndCdr();
    assert.equal(first.call.status, 'completed');
    assert.equal(first.row.served_from, null);
    const kept = await t.ctx.db('last_good_documents').where({ account_id: t.acct.id, number: DID }).first();
    assert.ok(kept, 'the reply was kept as the number’s last good document');

    t.server.routes.set('/lg', () => ({ status: 500, body: 'down' }));
    t.sink.packets = 0;
    const down = await callAndCdr();
    assert.equal(down.row.served_from, 'last_good', 'the CDR says the last good document ran');
    assert.ok(t.sink.speechSeconds() >= 1.5, `the caller heard the kept Say: ${t.sink.speechSeconds()} s`);
    const [event] = await wh0400(down.call.uuid);
    assert.equal(event.fallback, 'last_good');
    assert.equal(event.status, 500);
    assert.ok(event.lastGoodAgeSeconds >= 0 && event.lastGoodAgeSeconds < 60, JSON.stringify(event));
    assert.equal(down.call.reason_code, 'END.0200');

    const xml = '<Response><Say>Too late.</Say></Response>';
    t.server.routes.set('/lg', () => ({ body: xml, delayMs: 3000 }));
    const slow = await callAndCdr();
    assert.equal(slow.row.served_from, 'last_good');
    assert.equal((await wh0400(slow.call.uuid))[0].reason, 'timeout');
  });

  it('an expired last good document is not used: the fallback runs and WH.0400 says so', async () => {
    await t.ctx
      .db('last_good_documents')
      .where({ account_id: t.acct.id, number: DID })
      .update({ fetched_at: new Date(Date.now() - 2 * 86_400_000).toISOString() });
    t.server.routes.set('/lg', () => ({ status: 503, body: 'down' }));
    const down = await callAndCdr();
    assert.equal(down.row.served_from, null);
    const [event] = await wh0400(down.call.uuid);
    assert.equal(event.fallback, 'message');
  });

  it('a document naming the caller carries per-call state: it is never kept, so an outage runs the fallback', async () => {
    await t.ctx.db('last_good_documents').where({ account_id: t.acct.id }).delete();
    t.server.verbs('/personal', '<Response><Say>Hello +254733000009, welcome back.</Say><Hangup/></Response>');
    await t.setInboundUrl(t.server.url('/personal'));
    await callAndCdr();
    assert.equal((await t.ctx.db('last_good_documents').where({ account_id: t.acct.id })).length, 0);
    t.server.routes.set('/personal', () => ({ status: 500, body: 'down' }));
    const down = await callAndCdr();
    assert.equal(down.row.served_from, null);
    assert.equal((await wh0400(down.call.uuid))[0].fallback, 'message');
  });
});
