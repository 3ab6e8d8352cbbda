import assert from 'node:assert/strict';
import { mkdtempSync, statSync } from 'node:fs';
import { eventually } from '../support/wait.js';
import os from 'node:os';
import path from 'node:path';
import { driverOf } from '../../store/db.js';
import type { SqliteDriver } from '../../store/driver/sqlite.js';
import {
  findAccount,
  flushGroupCommit,
  groupCommitStats,
  inTransaction,
  insertAccount,
  migrate,
  openDb,
  openReadPool,
  sqlOf,
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
    await Promise.race([db?.destroy(), new Promise((r) => setTimeout(r, 1000))]);
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

  it('an explicit transaction joins the open batch: one commit for all, its rollback undoes only its own writes', async () => {
    await turn();
    const before = { ...groupCommitStats(db)! };
    const early = await insertAccount(db, 'early'); // no turn passes: its batch is still open
    const late = await inTransaction(db, (tx) => insertAccount(tx, 'late'));
    await assert.rejects(
      inTransaction(db, async (tx) => {
        await insertAccount(tx, 'rolled back');
        throw new Error('abort');
      }),
      /abort/,
    );
    const after = await insertAccount(db, 'after');
    await turn();
    await turn();
    assert.ok(await findAccount(reader, early.id));
    assert.ok(await findAccount(reader, late.id));
    assert.ok(await findAccount(reader, after.id));
    const names = (await reader('accounts').select('name')).map((r: { name: string }) => r.name);
    assert.ok(!names.includes('rolled back'));
    assert.ok(groupCommitStats(db)!.commits - before.commits <= 2, 'the transactions shared the group commit');
  });

  it('the turn ending while an explicit transaction runs waits for it, and commits what it wrote', async () => {
    const outside = await insertAccount(db, 'outside');
    let inside = '';
    await inTransaction(db, async (tx) => {
      inside = (await insertAccount(tx, 'inside')).id;
      await turn(); // the group's commit comes due here and must not commit half of this transaction
      await turn();
      assert.equal(await findAccount(reader, inside), undefined, 'not visible before the transaction ends');
      await insertAccount(tx, 'inside too');
    });
    await turn();
    assert.ok(await findAccount(reader, outside.id));
    assert.ok(await findAccount(reader, inside));
  });

  it('an exit halfway through an explicit transaction keeps the batch and undoes the transaction', async () => {
    const kept = await insertAccount(db, 'kept at exit');
    let half = '';
    let holding = false;
    const pending = inTransaction(db, async (tx) => {
      half = (await insertAccount(tx, 'half')).id;
      holding = true;
      await new Promise(() => undefined); // never ends: the connection closes under it, as at process exit
    });
    void pending.catch(() => undefined);
    await eventually(() => holding || undefined, 'the transaction holds its connection');
    (driverOf(db) as SqliteDriver).abandon();
    db = openDb({ databaseUrl: '', dataDir: dir, groupCommit: true });
    await reader.destroy();
    reader = openReadPool(db, 1)!;
    assert.ok(await findAccount(db, kept.id));
    assert.equal(await findAccount(db, half), undefined);
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

  it('checkpoints the WAL off the event loop: the writer only past 4,000 pages, and the database file still catches up', async () => {
    // The writer's own setting (a connection's).
    assert.deepEqual(await sqlOf(db).all('PRAGMA wal_autocheckpoint'), [{ wal_autocheckpoint: 4000 }]);
    const file = path.join(dir, 'simu.db');
    const before = statSync(file).size;
    for (let i = 0; i < 20; i++)
      await Promise.all(Array.from({ length: 50 }, (_, j) => insertAccount(db, `a${i}-${j}`)));
    await eventually(() => statSync(file).size > before, 'the checkpointer to copy the WAL into the database file');
  });

  it('with a window, writes wait for it to share a commit, and a flush commits them at once', async () => {
    const windowed = openDb({
      databaseUrl: '',
      dataDir: dir,
      sqliteFile: 'windowed.db',
      groupCommit: true,
      // Long enough that a loaded box never lets it pass between the writes and the first read below.
      groupCommitWindowMs: 3000,
    });
    const windowReader = openReadPool(windowed, 1)!;
    try {
      await migrate(windowed);
      await turn();
      const before = groupCommitStats(windowed)!.commits;
      const a = await insertAccount(windowed, 'first');
      await turn();
      const b = await insertAccount(windowed, 'second, a turn later');
      assert.equal(await findAccount(windowReader, a.id), undefined, 'not committed before the window ends');
      flushGroupCommit(windowed);
      assert.ok(await findAccount(windowReader, a.id));
      assert.ok(await findAccount(windowReader, b.id));
      assert.equal(groupCommitStats(windowed)!.commits - before, 1, 'both writes in one commit');
      const c = await insertAccount(windowed, 'after the flush');
      await eventually(() => findAccount(windowReader, c.id), 'the window to commit on its own', 8000, 50);
    } finally {
      await windowReader.destroy();
      await windowed.destroy();
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
