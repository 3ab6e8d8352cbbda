import assert from 'node:assert/strict';
import { insertCall, updateCall, type CallRow } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import { assertError } from './shapes.js';

/**
 * POST /api/calls/{uuid}/update and /digits at the API edge (docs/api.md, "Live call control"): validation with
 * stable codes, tenancy, ended calls, idempotent replay. The engine is the unit-test NullCallEngine, which records
 * what reached it; test/e2e/calls/call-control.test.ts drives the real switch.
 */
describe('api: live call control (update, digits)', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let owner: Tenant;
  let other: Tenant;

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    owner = await h.tenant('Owner');
    other = await h.tenant('Other');
  });
  after(async () => h?.stop());

  /** A call of `t` the engine holds live (answered). */
  async function liveCall(t: Tenant): Promise<CallRow> {
    const row = await insertCall(h.db, {
      account_id: t.accountId,
      direction: 'outbound',
      from_number: '+254700000001',
      to_number: '+254711000001',
      status: 'answered',
    });
    await h.engine.originate(row, { timeoutSeconds: 30 });
    return row;
  }

  const update = (uuid: string, body: unknown, key = owner.key, headers: Record<string, string> = {}) =>
    h.req('POST', `/api/calls/${uuid}/update`, { key, body, headers });
  const digits = (uuid: string, body: unknown, key = owner.key, headers: Record<string, string> = {}) =>
    h.req('POST', `/api/calls/${uuid}/digits`, { key, body, headers });

  it('update with a url hands the engine a fetch of that url and answers with the call', async () => {
    const call = await liveCall(owner);
    const r = await update(call.id, { url: 'https://example.test/next', method: 'POST' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.uuid, call.id);
    const last = h.engine.redirects.at(-1)!;
    assert.deepEqual(last.to, { url: 'https://example.test/next' });
    assert.equal(last.source, 'url');
  });

  it('update with twiml hands the engine the parsed document', async () => {
    const call = await liveCall(owner);
    const r = await update(call.id, { twiml: '<Response><Say>Moved</Say><Hangup/></Response>' });
    assert.equal(r.status, 200, r.text);
    const to = h.engine.redirects.at(-1)!.to as unknown as { document: { verbs: Array<{ verb: string }> } };
    assert.deepEqual(
      to.document.verbs.map((v) => v.verb),
      ['Say', 'Hangup'],
    );
  });

  it('bad bodies are refused with stable codes and never reach the engine', async () => {
    const call = await liveCall(owner);
    const before = h.engine.redirects.length;
    assertError(await update(call.id, {}), 400, 'VALIDATION_ERROR');
    assertError(await update(call.id, { url: 'https://a.test/', twiml: '<Response/>' }), 400, 'VALIDATION_ERROR');
    assertError(await update(call.id, { url: 'ftp://a.test/x' }), 400, 'VALIDATION_ERROR');
    assertError(await update(call.id, { twiml: '<Response/>', method: 'POST' }), 400, 'VALIDATION_ERROR');
    assertError(await update(call.id, { url: 'https://a.test/', extra: 1 }), 400, 'VALIDATION_ERROR');
    assertError(await update(call.id, { twiml: 'x'.repeat(16 * 1024 + 1) }), 400, 'VALIDATION_ERROR');
    assertError(await update(call.id, { url: 'https://a.test/', method: 'GET' }), 422, 'METHOD_UNSUPPORTED');
    assertError(await update(call.id, { twiml: '<Response><Say>unclosed</Response>' }), 422, 'TWIML_INVALID');
    assertError(await update(call.id, { twiml: '<Response><Bogus/></Response>' }), 422, 'TWIML_INVALID');
    const xxe =
      '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><Response><Say>&x;</Say></Response>';
    assertError(await update(call.id, { twiml: xxe }), 422, 'TWIML_INVALID');
    assert.equal(h.engine.redirects.length, before);
  });

  it("another account's call is 404, an unknown uuid 404, an ended call 409 CALL_ENDED", async () => {
    const call = await liveCall(owner);
    assertError(await update(call.id, { url: 'https://a.test/' }, other.key), 404, 'CALL_NOT_FOUND');
    assertError(await digits(call.id, { digits: '1' }, other.key), 404, 'CALL_NOT_FOUND');
    assertError(await update('no-such-call', { url: 'https://a.test/' }), 404, 'CALL_NOT_FOUND');
    await updateCall(h.db, call.id, { status: 'completed', ended_at: new Date().toISOString() });
    assertError(await update(call.id, { url: 'https://a.test/' }), 409, 'CALL_ENDED');
    assertError(await digits(call.id, { digits: '1' }), 409, 'CALL_ENDED');
  });

  it('a call the store shows live but the switch does not hold is 409 CALL_ENDED', async () => {
    const row = await insertCall(h.db, {
      account_id: owner.accountId,
      direction: 'inbound',
      from_number: '+254700000001',
      to_number: '+254711000001',
      status: 'answered',
    });
    assertError(await update(row.id, { url: 'https://a.test/' }), 409, 'CALL_ENDED');
  });

  it('the same Idempotency-Key replays the first answer and moves the call once; another body is 422', async () => {
    const call = await liveCall(owner);
    const before = h.engine.redirects.length;
    const body = { twiml: '<Response><Say>Once</Say></Response>' };
    const first = await update(call.id, body, owner.key, { 'idempotency-key': `upd-${call.id}` });
    const again = await update(call.id, body, owner.key, { 'idempotency-key': `upd-${call.id}` });
    assert.equal(first.status, 200);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    assert.equal(h.engine.redirects.length, before + 1, 'moved once');
    const other = await update(call.id, { twiml: '<Response/>' }, owner.key, { 'idempotency-key': `upd-${call.id}` });
    assertError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
  });

  it('digits: keys reach the engine once per Idempotency-Key; bad keys are 400', async () => {
    const call = await liveCall(owner);
    const before = h.engine.digits.length;
    const key = { 'idempotency-key': `dig-${call.id}` };
    assert.equal((await digits(call.id, { digits: '1w23#*AD' }, owner.key, key)).status, 200);
    assert.equal((await digits(call.id, { digits: '1w23#*AD' }, owner.key, key)).status, 200);
    assert.equal(h.engine.digits.length, before + 1);
    assert.equal(h.engine.digits.at(-1)!.digits, '1w23#*AD');
    for (const bad of ['', '12x', '1 2', 'W', '1'.repeat(33)])
      assertError(await digits(call.id, { digits: bad }), 400, 'VALIDATION_ERROR');
    assertError(await digits(call.id, {}), 400, 'VALIDATION_ERROR');
    assert.equal(h.engine.digits.length, before + 1);
  });
});
