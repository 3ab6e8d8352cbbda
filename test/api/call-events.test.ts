import assert from 'node:assert/strict';
import { insertCall, insertCallEvents, newId } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import * as SH from './shapes.js';

/**
 * GET /api/calls/{uuid}/events (beyond the spec, docs/api.md "Calls"): a call's stored events, oldest first, paged
 * like the call list, scoped to the key's account.
 */
describe('api: a call’s events', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  let other: Tenant;
  let callId: string;
  const CODES = ['CALL.0100', 'CALL.0180', 'CALL.0200', 'ROUTE.0100', 'CALL.0300'];

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    t = await h.tenant('Events', 0);
    other = await h.tenant('Someone else', 0);
    const call = await insertCall(h.db, {
      account_id: t.accountId,
      direction: 'outbound',
      from_number: '+254700000201',
      to_number: '+254711000201',
    });
    callId = call.id;
    const at = Date.parse('2026-01-01T10:00:00.000Z');
    await insertCallEvents(
      h.db,
      CODES.map((code, i) => ({
        id: newId(),
        account_id: t.accountId,
        call_id: call.id,
        code,
        event: code.toLowerCase(),
        data: JSON.stringify(code === 'ROUTE.0100' ? { trunk: 'carrier', sipStatus: 503 } : {}),
        created_at: new Date(at + i * 1000).toISOString(),
      })),
    );
  });
  after(async () => h?.stop());

  it('lists the events oldest first, with their data, in the list envelope', async () => {
    const r = await h.req('GET', `/api/calls/${callId}/events`, { key: t.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.body).sort(), ['events', 'limit', 'offset', 'total']);
    assert.deepEqual(
      r.body.events.map((e: { code: string }) => e.code),
      CODES,
    );
    assert.deepEqual([r.body.total, r.body.limit, r.body.offset], [5, 50, 0]);
    const route = r.body.events[3];
    assert.deepEqual(route, {
      code: 'ROUTE.0100',
      event: 'route.0100',
      data: { trunk: 'carrier', sipStatus: 503 },
      created_at: '2026-01-01T10:00:03.000Z',
    });
  });

  it('pages with limit and offset; total counts them all', async () => {
    const r = await h.req('GET', `/api/calls/${callId}/events/?limit=2&offset=2`, { key: t.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.body.events.map((e: { code: string }) => e.code),
      ['CALL.0200', 'ROUTE.0100'],
    );
    assert.deepEqual([r.body.total, r.body.limit, r.body.offset], [5, 2, 2]);
    const past = await h.req('GET', `/api/calls/${callId}/events?offset=10`, { key: t.key });
    assert.deepEqual([past.body.events, past.body.total], [[], 5]);
  });

  it('a limit out of bounds is a 400 naming it; an unknown call and another account’s call are 404', async () => {
    const bad = await h.req('GET', `/api/calls/${callId}/events?limit=500`, { key: t.key });
    SH.assertError(bad, 400, 'VALIDATION_ERROR');
    assert.match(bad.body.detail, /"limit"/);
    SH.assertError(await h.req('GET', `/api/calls/${callId}/events`, { key: other.key }), 404, 'CALL_NOT_FOUND');
    SH.assertError(
      await h.req('GET', '/api/calls/00000000-0000-0000-0000-000000000000/events', { key: t.key }),
      404,
      'CALL_NOT_FOUND',
    );
    SH.assertError(await h.req('GET', `/api/calls/${callId}/events`), 401);
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await h.req('GET', '/api/openapi.json')).body;
    const op = doc.paths['/api/calls/{uuid}/events']?.get;
    assert.ok(op, Object.keys(doc.paths).join(', '));
    assert.deepEqual(op.parameters.map((p: { name: string }) => p.name).sort(), ['limit', 'offset', 'uuid']);
  });
});
