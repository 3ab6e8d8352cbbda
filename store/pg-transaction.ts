/**
 * PostgreSQL statements and transactions without knex's runner and transaction machinery.
 *
 * knex makes a new knex instance for every transaction (its builder, client and runner: about a millisecond of the
 * switch's CPU each, two and a half transactions a carrier call) and runs each statement through its runner. Here a
 * transaction holds a connection of knex's pool, as knex's does, and hands `fn` a handle that store functions take
 * as their Db:
 *
 * - fixed SQL (store/fixed-sql.ts) on the handle runs on the held connection directly (runPg);
 * - knex's query builder and `raw` on the handle run on the same connection (`.connection(held)`), so store
 *   functions not on fixed SQL still work inside it;
 * - a transaction inside it is a savepoint; anything else reads through to the store's knex instance.
 *
 * knex's 'query', 'query-response' and 'query-error' events are emitted on the store's instance for every
 * statement, BEGIN and COMMIT included, with the transaction's id (`__knexTxId`, set on the connection as knex does):
 * the read cache and the phone-token cache keep a table written in a transaction uncached until it ends.
 *
 * Fixed texts run as named prepared statements (pg's `name`): PostgreSQL parses and plans a text once per
 * connection instead of once per statement. A prepared `select *` whose table has changed since (a migration in
 * the same process) fails with "cached plan must not change result type"; outside a transaction the statement runs
 * again under a new name, inside one the error goes to the caller (its transaction is aborted) and the next run
 * takes the new name.
 */
import type { Knex } from 'knex';
import { makeTxHandle } from './tx-handle.js';

type Db = Knex;

/** A pg connection as knex's pool hands it out. */
export interface PgConnection {
  __knexUid?: string;
  __knexTxId?: string;
  query(
    q: { text: string; values: unknown[]; name?: string },
    cb: (err: (Error & { code?: string }) | null, res: unknown) => void,
  ): void;
}

interface PgPool {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(c: PgConnection): Promise<unknown>;
}

/** Texts in PostgreSQL's placeholders, and the name each runs under, by the fixed text (`?` placeholders). */
const prepared = new Map<string, { text: string; name: string | undefined }>();
const MAX_PREPARED = 1000;
let names = 0;

function preparedOf(sql: string): { text: string; name: string | undefined } {
  let p = prepared.get(sql);
  if (p === undefined) {
    let n = 0;
    // The texts hold `?` only as placeholders.
    const text = sql.replace(/\?/g, () => `$${++n}`);
    // Statements without parameters (BEGIN, COMMIT) gain nothing from a name.
    p = { text, name: n > 0 && prepared.size < MAX_PREPARED ? `simu_${++names}` : undefined };
    if (prepared.size < MAX_PREPARED) prepared.set(sql, p);
  }
  return p;
}

/** PostgreSQL's "cached plan must not change result type": the table of a prepared statement changed. */
const isStalePlan = (err: { code?: string; message?: string }): boolean =>
  err.code === '0A000' && /cached plan/i.test(err.message ?? '');

function send(conn: PgConnection, q: { text: string; values: unknown[]; name?: string }): Promise<unknown> {
  return new Promise((resolve, reject) => conn.query(q, (err, r) => (err ? reject(err) : resolve(r))));
}

/**
 * Runs fixed SQL (`?` placeholders) on `conn`, emitting knex's query events on `db` (the store's root instance).
 * `inTx`: the connection is in a transaction (a failed statement is not run again).
 */
export async function runPg(db: Db, conn: PgConnection, sql: string, bindings: unknown[], inTx: boolean) {
  const emitter = db as unknown as { emit(e: string, ...a: unknown[]): void };
  const q = { sql, bindings, method: 'raw', __knexUid: conn.__knexUid, __knexTxId: conn.__knexTxId };
  emitter.emit('query', q);
  const p = preparedOf(sql);
  try {
    let res: unknown;
    try {
      res = await send(conn, { text: p.text, values: bindings, ...(p.name && { name: p.name }) });
    } catch (err) {
      if (p.name === undefined || !isStalePlan(err as Error)) throw err;
      p.name = `simu_${++names}`;
      if (inTx) throw err;
      res = await send(conn, { text: p.text, values: bindings, name: p.name });
    }
    emitter.emit('query-response', res, q);
    return res;
  } catch (err) {
    emitter.emit('query-error', err, q);
    throw err;
  }
}

/** Runs fixed SQL outside a transaction on a connection of knex's pool. */
export async function runPgPooled(db: Db, sql: string, bindings: unknown[]): Promise<unknown> {
  const pool = db.client as unknown as PgPool;
  const conn = await pool.acquireConnection();
  try {
    return await runPg(db, conn, sql, bindings, false);
  } finally {
    await pool.releaseConnection(conn);
  }
}

/** Connections of the handles of open transactions, for store/fixed-sql.ts. */
const openHandles = new WeakMap<object, () => PgConnection>();

export function pgConnectionOfHandle(handle: object): PgConnection | undefined {
  return openHandles.get(handle)?.();
}

let txSeq = 0;
let nestedSeq = 0;

/** Runs `fn` in a transaction on a connection of `db`'s pool: committed when it resolves, rolled back when it throws. */
export async function pgTransaction<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  const pool = db.client as unknown as PgPool;
  const conn = await pool.acquireConnection();
  conn.__knexTxId = `simu-pg-tx${++txSeq}`;
  let live = true;
  try {
    await runPg(db, conn, 'BEGIN;', [], true);
    const handle = makeHandle(db, conn, () => live);
    let result: T;
    try {
      result = await fn(handle);
    } catch (err) {
      live = false;
      await runPg(db, conn, 'ROLLBACK;', [], true).catch(() => undefined);
      throw err;
    }
    live = false;
    await runPg(db, conn, 'COMMIT;', [], true);
    return result;
  } finally {
    live = false;
    delete conn.__knexTxId;
    await pool.releaseConnection(conn);
  }
}

function makeHandle(db: Db, conn: PgConnection, live: () => boolean): Db {
  const check = (): void => {
    if (!live()) throw new Error('store: a statement on a transaction that has already ended');
  };
  const nested = async <T>(fn: (tx: Db) => Promise<T>, handle: Db): Promise<T> => {
    const name = `simu_nested_${++nestedSeq}`;
    await runPg(db, conn, `SAVEPOINT ${name};`, [], true);
    try {
      const result = await fn(handle);
      await runPg(db, conn, `RELEASE SAVEPOINT ${name};`, [], true);
      return result;
    } catch (err) {
      await runPg(db, conn, `ROLLBACK TO SAVEPOINT ${name};`, [], true).catch(() => undefined);
      throw err;
    }
  };
  const handle = makeTxHandle(db, conn, check, nested);
  openHandles.set(handle, () => {
    check();
    return conn;
  });
  return handle;
}

/** One statement of a pipelined transaction: fixed SQL (`?` placeholders) and its values. */
export interface PgStatement {
  sql: string;
  bindings: unknown[];
}

/**
 * Runs `statements` as one transaction sent at once (BEGIN, each statement, COMMIT), on a connection in pg's
 * pipeline mode (store/db.ts opens them so): one round trip for the lot, and whatever a statement locks is held
 * only while PostgreSQL runs the statements after it, never across a round trip to the switch and a turn of its
 * event loop. Each statement has its own snapshot (READ COMMITTED), taken when PostgreSQL starts it: a statement
 * after one that waited for a row lock sees what the lock's holder committed. Resolves to each statement's result;
 * when one fails, the ones after it fail too, COMMIT rolls the transaction back, and the first error is thrown.
 * On a connection not in pipeline mode the statements go one after another (the same transaction, more round trips).
 */
export async function pgPipelinedTransaction(db: Db, statements: readonly PgStatement[]): Promise<unknown[]> {
  const pool = db.client as unknown as PgPool;
  const conn = await pool.acquireConnection();
  conn.__knexTxId = `simu-pg-tx${++txSeq}`;
  try {
    const all = [{ sql: 'BEGIN;', bindings: [] }, ...statements, { sql: 'COMMIT;', bindings: [] }];
    const settled: PromiseSettledResult<unknown>[] = [];
    if ((conn as { pipeline?: boolean }).pipeline === true) {
      // Corked while the statements are handed over: their messages leave in one write (one system call and one
      // wake-up of the server process, instead of one a statement).
      const stream = (conn as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
      stream?.cork?.();
      let sent: Promise<unknown>[];
      try {
        sent = all.map((s) => runPg(db, conn, s.sql, s.bindings, true));
      } finally {
        stream?.uncork?.();
      }
      settled.push(...(await Promise.allSettled(sent)));
    } else {
      for (const s of all) {
        const failed = settled.some((r) => r.status === 'rejected');
        const sql = failed && s.sql === 'COMMIT;' ? 'ROLLBACK;' : s.sql;
        settled.push(...(await Promise.allSettled([runPg(db, conn, sql, s.bindings, true)])));
        if (failed && sql === 'ROLLBACK;') break;
      }
    }
    const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
    return settled.slice(1, 1 + statements.length).map((r) => (r as PromiseFulfilledResult<unknown>).value);
  } finally {
    delete conn.__knexTxId;
    await pool.releaseConnection(conn);
  }
}
