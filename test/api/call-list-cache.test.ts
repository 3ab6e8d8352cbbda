import assert from 'node:assert/strict';
import { CallListCache } from '../../api/call-list-cache.js';
import { insertAccount, insertCall, listCalls, updateCall, type Db } from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

for (const kind of BOTH_DBS) {
  describe(`calls list cache on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let accountId: string;
    before(async () => {
      db = await kind.open();
      accountId = (await insertAccount(db, 'Pages')).id;
      const base = Date.parse('2026-01-01T00:00:00Z');
      for (let i = 0; i < 240; i++)
        await insertCall(db, {
          account_id: accountId,
          direction: i % 2 ? 'inbound' : 'outbound',
          from_number: `+2547${i}`,
          to_number: '+2541',
          status: 'completed',
          // Groups of three share a timestamp, so the id tie-break matters.
          created_at: new Date(base + Math.floor(i / 3) * 1000).toISOString(),
        });
    });
    after(async () => db?.destroy());

    it('pages from anchors equal plain offset pages, for every offset and filter', async () => {
      const cache = new CallListCache(db, { maxEntries: 100, stride: 25 });
      for (const f of [{ accountId }, { accountId, direction: 'inbound' as const }]) {
        for (const offset of [0, 24, 25, 26, 49, 50, 99, 117, 118, 200, 230, 239, 240, 500]) {
          const want = (await listCalls(db, f, 10, offset)).map((c) => c.id);
          const got = (await cache.page(f, 10, offset)).map((c) => c.id);
          assert.deepEqual(got, want, `offset ${offset} ${JSON.stringify(f)}`);
        }
      }
    });

    it('a write through the store invalidates anchors and totals at once', async () => {
      let now = 0;
      const cache = new CallListCache(db, { maxEntries: 100, clock: { now: () => now }, stride: 25 });
      const f = { accountId };
      const before = await cache.total(f);
      const page = (await cache.page(f, 5, 100)).map((c) => c.id);
      await insertCall(db, { account_id: accountId, direction: 'inbound', from_number: '+1', to_number: '+2' });
      assert.equal(await cache.total(f), before + 1);
      const after = (await cache.page(f, 5, 101)).map((c) => c.id);
      assert.deepEqual(after, page, 'everything moved down by one');
      now += 10; // still within the TTL: cached values are reused
      assert.equal(await cache.total(f), before + 1);
    });

    it('search finds substrings through the trigram index and follows updates and deletes', async () => {
      const cache = new CallListCache(db, { maxEntries: 100, stride: 25, pageTtlMs: 0 }); // pages not kept: the index is under test
      const c = await insertCall(db, {
        account_id: accountId,
        direction: 'inbound',
        from_number: '+254798765432',
        to_number: '+2541',
      });
      const find = async (search: string) => (await cache.page({ accountId, search }, 50, 0)).map((r) => r.id);
      assert.deepEqual(await find('9876543'), [c.id]);
      assert.deepEqual(await find('98x'), []);
      await updateCall(db, c.id, { from_number: '+254711112222' });
      assert.deepEqual(await find('9876543'), []);
      assert.deepEqual(await find('1111222'), [c.id]);
      assert.equal(await cache.total({ accountId, search: '1111222' }), 1);
      await db('calls').where({ id: c.id }).delete();
      assert.deepEqual(await find('1111222'), []);
    });

    it('a page asked for again comes from memory until a call of the account is written or the TTL passes', async () => {
      let now = 0;
      const cache = new CallListCache(db, { maxEntries: 100, clock: { now: () => now }, stride: 25, pageTtlMs: 1000 });
      const f = { accountId, status: 'completed' as const };
      const first = await cache.page(f, 5, 0);
      const again = await cache.page(f, 5, 0);
      assert.equal(again, first, 'the same rows, not a new query');
      const c = await insertCall(db, {
        account_id: accountId,
        direction: 'outbound',
        from_number: '+1',
        to_number: '+2',
      });
      await updateCall(db, c.id, { status: 'completed' });
      const afterWrite = await cache.page(f, 5, 0);
      assert.notEqual(afterWrite, first);
      assert.equal(afterWrite[0].id, c.id, 'a write through the store is seen at once');
      await db('calls').where({ id: c.id }).delete(); // as another process would: the generation does not move
      assert.equal((await cache.page(f, 5, 0))[0].id, c.id, 'stale within the page TTL');
      now += 1001;
      assert.notEqual((await cache.page(f, 5, 0))[0]?.id, c.id);
    });

    it('a write by another process is seen once the TTL has passed', async () => {
      let now = 0;
      const cache = new CallListCache(db, { maxEntries: 100, clock: { now: () => now }, stride: 25 });
      const f = { accountId, direction: 'outbound' as const };
      const n = await cache.total(f);
      // A write that does not go through this module (another process): the generation does not move.
      await db('calls').insert({
        ...(await db('calls').where({ account_id: accountId }).first()),
        id: 'external-1',
        sid: 'call_external1',
        direction: 'outbound',
      });
      assert.equal(await cache.total(f), n, 'stale within the TTL');
      now += 5001;
      assert.equal(await cache.total(f), n + 1);
    });
  });
}
