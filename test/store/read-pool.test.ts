import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { insertAccount, migrate, openDb, openReadPool, sqlOf, type Db } from '../../store/index.js';
import { driverOf } from '../../store/db.js';
import { SqliteReadPool } from '../../store/driver/read-pool.js';

/**
 * The read pool (store/driver/read-pool.ts) beside the switch's writer: reads run off the event loop, see committed
 * writes, and opening a read connection never disturbs the writer's WAL shared memory (a second SQLite library in
 * the process did: it truncated the -shm under the writer at every open).
 */
describe('store: read pool beside the writer', function () {
  this.timeout(60000);
  let db: Db;

  beforeEach(async () => {
    db = openDb({ databaseUrl: '', dataDir: mkdtempSync(path.join(os.tmpdir(), 'simu-rp-')), groupCommit: true });
    await migrate(db);
  });
  afterEach(async () => {
    await db.destroy();
  });

  it('runs reads in the same SQLite library as the writer, and sees what the writer committed', async () => {
    const pool = openReadPool(db, 2)!;
    try {
      assert.ok(driverOf(pool) instanceof SqliteReadPool);
      const a = await insertAccount(db, 'seen by readers');
      await new Promise((r) => setImmediate(r)); // the group commit
      const row = await sqlOf(pool).get('select "name" from "accounts" where "id" = ?', [a.id]);
      assert.equal(row?.name, 'seen by readers');
      await assert.rejects(
        sqlOf(pool).run('insert into "accounts" ("id") values (?)', ['x'], 'accounts'),
        /readonly|query_only|read-only/i,
      );
    } finally {
      await pool.destroy();
    }
  });

  it('read connections opening and closing while the writer writes leave the database whole', async () => {
    let written = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        await Promise.all(Array.from({ length: 20 }, (_, i) => insertAccount(db, `w${written + i}`)));
        written += 20;
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let round = 0; round < 15; round++) {
      const pool = openReadPool(db, 2)!;
      const counts = await Promise.all([1, 2].map(() => sqlOf(pool).get('select count(*) as "n" from "accounts"')));
      for (const c of counts) assert.ok(Number(c?.n) >= 0);
      await pool.destroy();
    }
    stop = true;
    await writer;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(await db.raw('PRAGMA integrity_check'), [{ integrity_check: 'ok' }]);
    const pool = openReadPool(db, 1)!;
    try {
      assert.equal(Number((await sqlOf(pool).get('select count(*) as "n" from "accounts"'))?.n), written);
    } finally {
      await pool.destroy();
    }
  });
});
