import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import {
  getAccount,
  inTransaction,
  insertAccount,
  openDb,
  pingDb,
  setAccountBalance,
  type Db,
  type Tx,
} from '../../store/index.js';
import { selectRows } from '../../store/fixed-sql.js';
import { driverOf } from '../../store/db.js';
import { PgDriver, type PgStatement } from '../../store/driver/pg.js';
import { postgresDb } from '../support/db.js';
import { eventually } from '../support/wait.js';

/**
 * PostgreSQL transactions of the store's driver (store/driver/pg.ts): atomic, nested savepoints, a handle dead once
 * ended, every statement told with the transaction's id; fixed texts as named prepared statements; a pipelined
 * transaction; the switch's warm pool.
 */
describe('store: transactions on a PostgreSQL pool connection', function () {
  this.timeout(60000);
  let db: Db;
  let seen: { sql: string; tx?: number }[];
  const listen = (q: { sql: string; tx?: number }) => seen.push(q);
  const pipelined = (statements: PgStatement[]) => (driverOf(db) as PgDriver).pipelined(statements);
  before(async () => {
    db = await postgresDb.open();
    db.on('query', listen);
  });
  after(async () => db?.destroy());
  beforeEach(() => (seen = []));

  it("commits what was written on the handle, with the transaction's id on every statement", async () => {
    const a = await inTransaction(db, async (tx) => {
      const row = await insertAccount(tx, 'in tx');
      await setAccountBalance(tx, row.id, 500);
      return row;
    });
    assert.equal((await getAccount(db, a.id)).balance_cents, 500);
    const inTx = seen.filter((q) => q.tx !== undefined);
    assert.deepEqual(
      [inTx[0]?.sql, inTx.at(-1)?.sql],
      ['BEGIN', 'COMMIT'],
      `statements: ${seen.map((q) => q.sql).join(' | ')}`,
    );
    assert.ok(inTx.some((q) => /^insert into "accounts"/.test(q.sql)));
    assert.ok(inTx.some((q) => /^update "accounts"/.test(q.sql)));
    assert.equal(new Set(inTx.map((q) => q.tx)).size, 1);
  });

  it('rolls back everything when fn throws; a nested transaction that fails undoes only its own writes', async () => {
    const a = await insertAccount(db, 'rolled');
    await assert.rejects(
      inTransaction(db, async (tx) => {
        await setAccountBalance(tx, a.id, 111);
        throw new Error('no');
      }),
      /no/,
    );
    assert.equal((await getAccount(db, a.id)).balance_cents, 0);
    await inTransaction(db, async (tx) => {
      await setAccountBalance(tx, a.id, 222);
      await assert.rejects(
        inTransaction(tx, async (inner: Tx) => {
          await setAccountBalance(inner, a.id, 333);
          throw new Error('inner');
        }),
        /inner/,
      );
    });
    assert.equal((await getAccount(db, a.id)).balance_cents, 222);
  });

  it('refuses statements on its handle once it has ended', async () => {
    const a = await insertAccount(db, 'dead');
    let handle: Tx | undefined;
    await inTransaction(db, async (tx) => {
      handle = tx;
    });
    await assert.rejects(setAccountBalance(handle!, a.id, 1), /already ended/);
  });

  it('a prepared select * whose table changed since runs again under a new name', async () => {
    await db.raw('create table "p_stale" ("id" integer primary key)');
    await db.raw('insert into "p_stale" values (1)');
    const sql = 'select * from "p_stale" where "id" = ?';
    // Prepared on each connection that runs it: several at once, so that most of the pool holds it.
    await Promise.all(Array.from({ length: 10 }, () => selectRows(db, sql, [1])));
    await db.raw('alter table "p_stale" add column "extra" integer default 7');
    const rows = await Promise.all(Array.from({ length: 10 }, () => selectRows(db, sql, [1])));
    for (const r of rows) assert.deepEqual(r, [{ id: 1, extra: 7 }]);
  });

  it('a pipelined transaction is atomic: a failing statement rolls back the ones before it', async () => {
    const a = await insertAccount(db, 'pipelined');
    const set = (cents: number) => ({
      sql: 'update "accounts" set "balance_cents" = ? where "id" = ?',
      bindings: [cents, a.id],
    });
    const [, r] = await pipelined([
      set(40),
      { sql: 'select "balance_cents" from "accounts" where "id" = ?', bindings: [a.id] },
    ]);
    assert.equal(Number(r![0]!.balance_cents), 40);
    await assert.rejects(
      pipelined([set(50), { sql: 'select 1 / 0 as "x" where 1 = ?', bindings: [1] }, set(60)]),
      /division by zero/,
    );
    assert.equal((await getAccount(db, a.id)).balance_cents, 40);
    // The connection is usable afterwards (the pool hands it out again).
    await Promise.all(Array.from({ length: 12 }, (_, i) => pipelined([set(100 + i)])));
    assert.ok((await getAccount(db, a.id)).balance_cents >= 100);
  });

  it('a pipelined transaction leaves in one write to the socket', async () => {
    const a = await insertAccount(db, 'one write');
    await pipelined([{ sql: 'select 1 as "x" where 1 = ?', bindings: [1] }]); // a connection is open and warm
    const writes: number[] = [];
    const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
    const own = { _write: proto._write, _writev: proto._writev };
    proto._write = function (this: Socket, ...args: unknown[]) {
      writes.push(1);
      return own._write.apply(this, args);
    };
    proto._writev = function (this: Socket, chunks: unknown, ...rest: unknown[]) {
      writes.push((chunks as unknown[]).length);
      return own._writev.apply(this, [chunks, ...rest]);
    };
    try {
      await pipelined([
        { sql: 'update "accounts" set "balance_cents" = ? where "id" = ?', bindings: [7, a.id] },
        { sql: 'select "balance_cents" from "accounts" where "id" = ?', bindings: [a.id] },
      ]);
    } finally {
      Object.assign(proto, own);
    }
    assert.equal(writes.length, 1, `socket writes (messages each): ${writes.join(', ')}`);
  });

  it("the switch's pool (warmPool) opens all its connections at once and keeps them; others open on demand", async () => {
    const c = db.client.config.connection as { user: string; host: string; port: string; database: string };
    const url = `postgres://${c.user}@${c.host}:${c.port}/${c.database}`;
    const warm = openDb({ databaseUrl: url, dataDir: '', warmPool: true });
    const lazy = openDb({ databaseUrl: url, dataDir: '' });
    try {
      const pool = (d: Db) => (driverOf(d) as PgDriver).connections();
      await eventually(() => pool(warm).idle === 10, 'ten open connections');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(pool(warm).total, 10, 'never reaped below ten');
      await pingDb(lazy);
      assert.equal(pool(lazy).total, 1);
    } finally {
      await Promise.all([warm.destroy(), lazy.destroy()]);
    }
  });
});
