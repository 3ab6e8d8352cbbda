import assert from 'node:assert/strict';
import { insertCall } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import * as SH from './shapes.js';

/**
 * Issue 15, item 8: `from_dt`/`to_dt` without a zone are UTC (never the server's local time) and a date alone is
 * its midnight UTC. The server process runs in Africa/Nairobi (UTC+3) here, so reading them as local time would
 * move every bound by three hours and change the counts below.
 */
describe('api: GET /api/calls from_dt / to_dt are UTC', function () {
  this.timeout(20000);
  let h: ApiHarness;
  let acct: Tenant;
  const savedTz = process.env.TZ;

  before(async () => {
    process.env.TZ = 'Africa/Nairobi';
    assert.equal(new Date('2026-01-01T00:00:00').getTimezoneOffset(), -180, 'the local zone took effect');
    h = await ApiHarness.start(sqliteDb);
    acct = await h.tenant('Dates', 0);
    // One call every hour from 2025-12-31T20:00Z to 2026-01-01T04:00Z (9 calls).
    const base = Date.parse('2025-12-31T20:00:00Z');
    for (let i = 0; i < 9; i++)
      await insertCall(h.db, {
        account_id: acct.accountId,
        direction: 'outbound',
        from_number: '+254700000001',
        to_number: '+254733000001',
        status: 'completed',
        created_at: new Date(base + i * 3_600_000).toISOString(),
      });
  });
  after(async () => {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
    await h?.stop();
  });

  const total = async (query: string): Promise<number> => {
    const r = await h.req('GET', `/api/calls?${query}`, { key: acct.key });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.total as number;
  };
  const q = (from: string, to?: string) =>
    `from_dt=${encodeURIComponent(from)}${to === undefined ? '' : `&to_dt=${encodeURIComponent(to)}`}`;

  it('a date-time without a zone is UTC, the same as with Z', async () => {
    assert.equal(await total(q('2026-01-01T00:00:00Z')), 5, '00:00 .. 04:00');
    assert.equal(await total(q('2026-01-01T00:00:00')), 5);
    assert.equal(await total(q('2026-01-01T00:00')), 5, 'minutes precision too');
    assert.equal(await total(`to_dt=${encodeURIComponent('2025-12-31T22:00:00')}`), 3, '20:00 .. 22:00');
    assert.equal(await total(q('2026-01-01T03:00:00+03:00', '2026-01-01T05:00:00+03:00')), 3, 'an offset is honoured');
  });

  it('a date alone is its midnight UTC (from_dt and to_dt alike)', async () => {
    assert.equal(await total(q('2026-01-01')), 5, 'from 2026-01-01T00:00Z: 00:00 .. 04:00');
    assert.equal(await total(`to_dt=2026-01-01`), 5, 'up to 2026-01-01T00:00Z inclusive: 20:00 .. 00:00');
    assert.equal(await total(q('2025-12-31', '2026-01-01')), 5);
  });

  it('what is not a date or date-time is still a 400 naming the field', async () => {
    for (const bad of ['yesterday', '2026-1-1', '2026-01-01T25:00:00', '01/01/2026']) {
      const r = await h.req('GET', `/api/calls?from_dt=${encodeURIComponent(bad)}`, { key: acct.key });
      SH.assertError(r, 400, 'VALIDATION_ERROR');
      assert.match(r.body.detail, /from_dt/);
    }
  });
});
