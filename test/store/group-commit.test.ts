import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  findAccount,
  groupCommitStats,
  inTransaction,
  insertAccount,
  migrate,
  openDb,
  openReadPool,
  type Db,
} from '../../store/index.js';

/** The SQLite connection's group commit (store/sqlite-connection.ts): fewer commits, nothing lost or reordered. */
describe('store: SQLite group commit', function () {
  this.timeout(30000);
  let dir: string;
  let db: Db;
  let reader: Db;
  const turn = () => new Promise<void>((r) => setImmediate(r));

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-gc-'));
    db = openDb({ databaseUrl: '', dataDir: dir, groupCommit: true });
    await migrate(db);
    reader = openReadPool(db, 1)!;
  });
  afterEach(async () => {
    await reader?.destroy();
    await db?.destroy();
  });

  it('writes made in one turn of the event loop share one commit, and other connections see them after it', async () => {
    await turn();
    const before = { ...groupCommitStats(db)! };
    const made = await Promise.all(['a', 'b', 'c', 'd'].map((n) => insertAccount(db, n)));
    await turn();
    const after = groupCommitStats(db)!;
    assert.equal(after.commits - before.commits, 1, 'one commit for four writes');
    assert.ok(after.writes - before.writes >= 4);
    for (const a of made) assert.equal((await findAccount(reader, a.id))?.name, a.name);
  });

  it('an explicit transaction first commits the open batch and then runs as its own', async () => {
    const early = await insertAccount(db, 'early'); // no turn passes: its batch is still open
    const late = await inTransaction(db, (tx) => insertAccount(tx, 'late'));
    await assert.rejects(
      inTransaction(db, async (tx) => {
        await insertAccount(tx, 'rolled back');
        throw new Error('abort');
      }),
      /abort/,
    );
    await turn();
    assert.ok(await findAccount(reader, early.id));
    assert.ok(await findAccount(reader, late.id));
    const names = (await reader('accounts').select('name')).map((r: { name: string }) => r.name);
    assert.ok(!names.includes('rolled back'));
  });

  it('a write that fails leaves the other writes of its batch in place', async () => {
    const kept = await insertAccount(db, 'kept');
    await assert.rejects(db('accounts').insert({ ...(await findAccount(db, kept.id))! }), /UNIQUE|constraint/i);
    const also = await insertAccount(db, 'also kept');
    await turn();
    assert.ok(await findAccount(reader, kept.id));
    assert.ok(await findAccount(reader, also.id));
  });

  it('is off unless asked for: each write commits on its own', async () => {
    const plain = openDb({ databaseUrl: '', dataDir: dir, sqliteFile: 'plain.db' });
    try {
      await migrate(plain);
      await insertAccount(plain, 'alone');
      assert.equal(groupCommitStats(plain)!.commits, 0);
    } finally {
      await plain.destroy();
    }
  });

  it('closing the store commits a batch still open', async () => {
    const a = await insertAccount(db, 'last words');
    await reader.destroy();
    await db.destroy(); // in the same turn as the write
    db = openDb({ databaseUrl: '', dataDir: dir, groupCommit: true });
    reader = openReadPool(db, 1)!;
    assert.equal((await findAccount(db, a.id))?.name, 'last words');
  });
});
