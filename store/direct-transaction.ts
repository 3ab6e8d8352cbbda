/**
 * Transactions on the switch's SQLite writer without knex's transaction machinery.
 *
 * knex makes a whole new knex instance for every transaction and runs each of its statements through its runner
 * (connection hand-off, SQL formatting, bindings): under the carrier bench that was about a tenth of the switch's
 * CPU, spent on the two transactions every call makes (settling each leg, a batch of events). Here a transaction
 * holds the pool's one connection exactly as knex's does (so every statement from outside it, knex's or fixed
 * SQL's, waits for it), runs as the same savepoint inside the group commit (store/sqlite-connection.ts), and hands
 * `fn` a handle that store functions take as their Db:
 *
 * - fixed SQL (store/fixed-sql.ts) on the handle runs synchronously on the connection, inside the transaction;
 * - knex's query builder on the handle (`tx('table')…`, `tx.raw(…)`) runs on the same held connection, so the
 *   store functions not yet moved to fixed SQL still work inside it;
 * - a transaction inside it is a nested savepoint; anything else reads through to the store's knex instance
 *   (its 'query' event included, which the read cache's invalidation listens to).
 *
 * Once the transaction has ended the handle refuses every statement.
 */
import type { Knex } from 'knex';
import type { RawConnection } from './sqlite-connection.js';
import { makeTxHandle } from './tx-handle.js';

type Db = Knex;

/** Connections of the handles of open transactions, for store/fixed-sql.ts (through store/db.ts directConnection). */
const openHandles = new WeakMap<object, () => RawConnection>();

export function connectionOfHandle(handle: object): RawConnection | undefined {
  return openHandles.get(handle)?.();
}

let nestedSeq = 0;

/**
 * Runs `fn` in a transaction on `db`'s SQLite writer `conn` (the connection knex's pool holds: its BEGIN, COMMIT and
 * ROLLBACK are the group commit's savepoint). Committed when `fn` resolves, rolled back when it throws.
 */
export async function directTransaction<T>(db: Db, conn: RawConnection, fn: (tx: Db) => Promise<T>): Promise<T> {
  const client = db.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): unknown };
  const held = await client.acquireConnection();
  try {
    conn.prepare('BEGIN;').run();
    let live = true;
    const handle = makeHandle(db, held, conn, () => live);
    let result: T;
    try {
      result = await fn(handle);
    } catch (err) {
      live = false;
      conn.prepare('ROLLBACK;').run();
      throw err;
    }
    live = false;
    conn.prepare('COMMIT;').run();
    return result;
  } finally {
    client.releaseConnection(held);
  }
}

function makeHandle(db: Db, held: unknown, conn: RawConnection, live: () => boolean): Db {
  const check = (): void => {
    if (!live()) throw new Error('store: a statement on a transaction that has already ended');
  };
  const nested = async <T>(fn: (tx: Db) => Promise<T>, handle: Db): Promise<T> => {
    const name = `simu_nested_${++nestedSeq}`;
    conn.exec(`SAVEPOINT ${name}`);
    try {
      const result = await fn(handle);
      conn.exec(`RELEASE ${name}`);
      return result;
    } catch (err) {
      if (conn.inTransaction) conn.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      throw err;
    }
  };
  const handle = makeTxHandle(db, held, check, nested);
  openHandles.set(handle, () => {
    check();
    return conn;
  });
  return handle;
}
