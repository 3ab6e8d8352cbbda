import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  callsSearchBacklog,
  countCalls,
  indexCallsSearch,
  insertAccount,
  insertCall,
  listCalls,
  migrate,
  openDb,
  startCallsSearchIndexer,
  updateCall,
  type Db,
} from '../../store/index.js';
import { migrationSource } from '../../store/migrations/index.js';
import { BOTH_DBS } from '../support/db.js';
import { eventually } from '../support/wait.js';

/** What the FTS index itself holds for a trigram (SQLite), without the tail a search adds. */
const indexed = async (db: Db, trigram: string): Promise<number> =>
  Number((await db.raw(`select count(*) as n from calls_search where calls_search match ?`, [`"${trigram}"`]))[0].n);

const inbound = (db: Db, accountId: string, from: string) =>
  insertCall(db, { account_id: accountId, direction: 'inbound', from_number: from, to_number: '+2541' });
const search = async (db: Db, accountId: string, s: string) =>
  (await listCalls(db, { accountId, search: s }, 50, 0)).map((c) => c.id);

for (const kind of BOTH_DBS) {
  describe(`calls search on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let accountId: string;
    before(async () => {
      db = await kind.open();
      accountId = (await insertAccount(db, 'Search')).id;
    });
    after(async () => db?.destroy());

    const call = (from: string) => inbound(db, accountId, from);
    const find = (s: string) => search(db, accountId, s);

    it('a call created a moment ago is found by number search, before and after it is indexed', async () => {
      const c = await call('+254733104417');
      assert.deepEqual(await find('3310441'), [c.id]);
      assert.equal(await countCalls(db, { accountId, search: '3310441' }), 1);
      await indexCallsSearch(db);
      assert.deepEqual(await find('3310441'), [c.id]);
      assert.equal(await callsSearchBacklog(db), 0);
    });

    it('changes of numbers and deletes are followed, indexed or not yet', async () => {
      const a = await call('+254733205528');
      await indexCallsSearch(db);
      const b = await call('+254733205529'); // past the watermark
      await updateCall(db, a.id, { from_number: '+254744306631' });
      await updateCall(db, b.id, { from_number: '+254744306632' });
      assert.deepEqual(await find('3320552'), []);
      assert.deepEqual((await find('4430663')).sort(), [a.id, b.id].sort());
      await indexCallsSearch(db);
      assert.deepEqual((await find('4430663')).sort(), [a.id, b.id].sort());
      await db('calls').where({ id: a.id }).delete();
      assert.deepEqual(await find('4430663'), [b.id]);
    });
  });
}

describe('calls search index on sqlite: written in batches past a watermark', function () {
  this.timeout(60000);
  let db: Db;
  let accountId: string;
  beforeEach(async () => {
    db = openDb({ databaseUrl: '', dataDir: mkdtempSync(path.join(os.tmpdir(), 'simu-search-')) });
    await migrate(db);
    accountId = (await insertAccount(db, 'Batches')).id;
  });
  afterEach(() => db.destroy());

  const call = (from: string) => inbound(db, accountId, from);
  const find = (s: string) => search(db, accountId, s);

  it('inserting a call writes nothing to the index; the indexer does, at most maxRows at a time', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await call(`+25475550${i}770`)).id);
    assert.equal(await indexed(db, '770'), 0, 'no index write per insert');
    assert.equal(await callsSearchBacklog(db), 5);
    assert.deepEqual((await find('5550')).sort(), [...ids].sort(), 'the tail is searched');
    assert.equal(await indexCallsSearch(db, 2), 2);
    assert.equal(await indexed(db, '770'), 2);
    assert.equal(await callsSearchBacklog(db), 3);
    assert.deepEqual((await find('5550')).sort(), [...ids].sort(), 'half indexed, half tail: all found once');
    assert.equal(await indexCallsSearch(db), 3);
    assert.equal(await indexCallsSearch(db), 0);
    assert.equal(await indexed(db, '770'), 5);
    assert.deepEqual((await find('5550')).sort(), [...ids].sort());
  });

  it('a new call that takes the rowid of a deleted indexed one is indexed at once', async () => {
    await call('+254766600001');
    const last = await call('+254766600002');
    await indexCallsSearch(db);
    await db('calls').where({ id: last.id }).delete();
    const again = await call('+254777700003'); // SQLite gives it max(rowid) + 1: the deleted row's rowid
    assert.equal(await callsSearchBacklog(db), 0, 'at or below the watermark');
    assert.deepEqual(await find('7770000'), [again.id]);
    assert.equal(await indexed(db, '003'), 1);
  });

  it("the switch's indexer catches up within its interval", async () => {
    const indexer = startCallsSearchIndexer(db, (err) => assert.fail(String(err)), 20);
    try {
      const c = await call('+254788812345');
      await eventually(async () => (await indexed(db, '345')) === 1, 'the indexer to index the new call', 5000);
      assert.equal(await callsSearchBacklog(db), 0);
      assert.deepEqual(await find('8881234'), [c.id]);
    } finally {
      indexer.stop();
    }
  });

  /** A store migrated up to 026 (005's trigger in place), for `fn`; destroyed after. */
  async function storeAt026(fn: (d: Db, accountId: string) => Promise<void>): Promise<void> {
    const d = openDb({ databaseUrl: '', dataDir: mkdtempSync(path.join(os.tmpdir(), 'simu-search-026-')) });
    try {
      const getMigrations = async () => (await migrationSource.getMigrations([])).filter(([n]) => n < '027');
      await d.migrate.latest({ migrationSource: { ...migrationSource, getMigrations } });
      await fn(d, (await insertAccount(d, 'Before 027')).id);
    } finally {
      await d.destroy();
    }
  }

  it('a database whose 005 trigger a table rebuild dropped is indexed afresh from 027 on, every row found', () =>
    storeAt026(async (old, acct) => {
      await old.raw('drop trigger calls_search_ai');
      const c = await inbound(old, acct, '+254711213141');
      await migrate(old);
      assert.equal(await callsSearchBacklog(old), 1);
      assert.deepEqual(await search(old, acct, '1121314'), [c.id]);
      await indexCallsSearch(old);
      assert.equal(await indexed(old, '141'), 1);
    }));

  it('a database migrated to 027 keeps its calls searchable, and new ones are found', () =>
    storeAt026(async (old, acct) => {
      const before = await inbound(old, acct, '+254799912121');
      await migrate(old);
      assert.equal(await callsSearchBacklog(old), 0, 'rows indexed by 005 are below the watermark');
      const after = await inbound(old, acct, '+254799912122');
      const both = [before.id, after.id].sort();
      assert.deepEqual((await search(old, acct, '9991212')).sort(), both);
      await indexCallsSearch(old);
      assert.deepEqual((await search(old, acct, '9991212')).sort(), both);
      await inbound(old, acct, '+254799912123');
      // Back to 026: the later migrations first, then 027 itself.
      while ((await old.migrate.list({ migrationSource }))[0].some((m: { name: string }) => m.name >= '027'))
        await old.migrate.down({ migrationSource });
      assert.equal(await indexed(old, '123'), 1, 'going back to 005 indexes the tail');
      await inbound(old, acct, '+254799912124');
      assert.equal(await indexed(old, '124'), 1, "and 005's trigger indexes each insert again");
    }));
});
