import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  findAccountSettings,
  flushGroupCommit,
  getSettingCached,
  inTransaction,
  insertAccount,
  migrate,
  openDb,
  putSetting,
  setAccountBalance,
  updateAccount,
  type Db,
} from '../../store/index.js';
import { CACHED_TABLES } from '../../store/read-cache.js';
import { newPostgresDatabase } from '../support/db.js';

/** Two processes' stores on one database: the switch's (watching other writers) and another writer's (the CLI). */
const KINDS: { name: string; open(): Promise<{ sw: Db; cli: Db }> }[] = [
  {
    name: 'sqlite',
    async open() {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-ow-'));
      const sw = openDb({ databaseUrl: '', dataDir, groupCommit: true, watchOtherWriters: true });
      await migrate(sw);
      return { sw, cli: openDb({ databaseUrl: '', dataDir }) };
    },
  },
  {
    name: 'postgres',
    async open() {
      const url = await newPostgresDatabase();
      const sw = openDb({ databaseUrl: url, dataDir: os.tmpdir(), warmPool: true, watchOtherWriters: true });
      await migrate(sw);
      return { sw, cli: openDb({ databaseUrl: url, dataDir: os.tmpdir() }) };
    },
  },
];

/** Ms until `read` answers `want`, polled every 2 ms; fails after 3 s. */
async function msUntil<T>(read: () => Promise<T>, want: T): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < 3000) {
    if ((await read()) === want) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`never saw ${String(want)}`);
}

KINDS.forEach((kind) =>
  describe(`store: another process's writes drop the switch's read cache (${kind.name})`, function () {
    this.timeout(20000);
    let sw: Db;
    let cli: Db;
    let reads = 0;
    const count = (q: { sql: string }): void => void (/^select \* from .accounts./i.test(q.sql) && reads++);

    before(async () => {
      ({ sw, cli } = await kind.open());
      sw.on('query', count);
    });
    after(async () => {
      await cli?.destroy();
      await sw?.destroy();
    });

    it('an account setting and a platform setting written elsewhere are read anew within 100 ms', async () => {
      const a = await insertAccount(cli, 'a');
      await new Promise((r) => setTimeout(r, 200)); // the listener has started
      for (const [i, on] of [true, false, true].entries()) {
        const lastGood = async () => Boolean((await findAccountSettings(sw, a.id))?.last_good_document);
        assert.equal(await lastGood(), !on, 'cached before the write');
        await updateAccount(cli, a.id, { last_good_document: on });
        const ms = await msUntil(lastGood, on);
        assert.ok(ms < 100, `write ${i + 1} seen after ${ms.toFixed(0)} ms`);
      }
      await getSettingCached(sw, 'draining');
      await putSetting(cli, 'draining', 'true');
      assert.ok((await msUntil(() => getSettingCached(sw, 'draining'), 'true')) < 100);
      await putSetting(cli, 'draining', 'false');
    });

    it("its own writes, the ledger's and the checkpoints do not drop the cache", async () => {
      const a = await insertAccount(sw, 'own');
      // One process holding two SQLite connections: the switch's open write group is committed before the other
      // writes (it would wait for a loop that its busy wait blocks).
      flushGroupCommit(sw);
      await findAccountSettings(sw, a.id);
      reads = 0;
      const other = await insertAccount(cli, 'other');
      await new Promise((r) => setTimeout(r, 150));
      await findAccountSettings(sw, a.id);
      assert.equal(reads, 1, 'a write elsewhere: read again once');
      // Its own writes for 600 ms (three of the SQLite checkpointer's rounds): nothing read again.
      reads = 0;
      for (let i = 0; i < 20; i++) {
        await inTransaction(sw, (tx) => setAccountBalance(tx, a.id, i));
        await sw('platform_settings').insert({ key: `k${i}`, value: 'v', updated_at: new Date().toISOString() });
        flushGroupCommit(sw);
        await new Promise((r) => setTimeout(r, 30));
        await findAccountSettings(sw, a.id);
      }
      assert.equal(reads, 0, 'own writes and checkpoints');
      if (kind.name === 'sqlite') return; // SQLite says that another connection committed, not what it wrote
      for (let i = 0; i < 10; i++) {
        await inTransaction(cli, (tx) => setAccountBalance(tx, other.id, i));
        await new Promise((r) => setTimeout(r, 30));
        await findAccountSettings(sw, a.id);
      }
      assert.equal(reads, 0, 'the ledger elsewhere (a balance moved) notifies nobody');
    });
  }),
);

describe('store: the change triggers (postgres)', function () {
  this.timeout(20000);
  let db: Db;
  before(async () => {
    db = openDb({ databaseUrl: await newPostgresDatabase(), dataDir: os.tmpdir() });
    await migrate(db);
  });
  after(() => db?.destroy());

  it('every cached table has one; on accounts it covers every column but the balance (a new column needs it)', async () => {
    const { rows: triggers } = await db.raw(
      `select distinct event_object_table as t from information_schema.triggers where trigger_name = 'simu_notify_change'`,
    );
    assert.deepEqual(triggers.map((r: { t: string }) => r.t).sort(), [...CACHED_TABLES].sort());
    const { rows: covered } = await db.raw(
      `select event_object_column as c from information_schema.triggered_update_columns
       where trigger_name = 'simu_notify_change' and event_object_table = 'accounts'`,
    );
    const { rows: all } = await db.raw(
      `select column_name as c from information_schema.columns where table_schema = current_schema() and table_name = 'accounts'`,
    );
    assert.deepEqual(
      covered.map((r: { c: string }) => r.c).sort(),
      all
        .map((r: { c: string }) => r.c)
        .filter((c: string) => c !== 'balance_cents')
        .sort(),
    );
  });
});
