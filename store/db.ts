import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.js';

export type Db = Knex;
/** An open transaction: every store function that takes a Db takes one, and then runs inside it. */
export type Tx = Knex.Transaction;

export interface DbOptions {
  /** postgres://… for PostgreSQL; empty for SQLite in dataDir. */
  databaseUrl: string;
  dataDir: string;
  /** SQLite file name inside dataDir (tests use their own). */
  sqliteFile?: string;
}

export function isPostgres(db: Db): boolean {
  return db.client.config.client === 'pg';
}

/**
 * Opens the store. SQLite runs in WAL mode with a busy timeout, one connection: SQLite serialises writers anyway,
 * and a single connection makes every knex transaction a real serialised transaction (no SQLITE_BUSY races).
 *
 * The connection is better-sqlite3's: a statement runs on the calling thread in microseconds, instead of a hop to
 * the libuv thread pool and back per statement (node-sqlite3), which cost the carrier path about a third of its
 * CPU per call (bench/calls/carrier.bench.ts). Statements are prepared once per distinct SQL text and reused.
 * Reads that may be slow (the calls list, search) go to the read pool (store/read-pool.ts), which stays on
 * node-sqlite3 so that they run off the event loop.
 */
export function openDb(opts: DbOptions): Db {
  if (/^postgres(ql)?:\/\//.test(opts.databaseUrl)) {
    return knexFactory({ client: 'pg', connection: opts.databaseUrl, pool: { min: 0, max: 10 } });
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const filename = path.join(opts.dataDir, opts.sqliteFile ?? 'simu.db');
  return knexFactory({
    client: 'better-sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
        try {
          conn.pragma('journal_mode = WAL');
          conn.pragma('busy_timeout = 5000');
          conn.pragma('foreign_keys = ON');
          conn.pragma('synchronous = NORMAL');
          cachePreparedStatements(conn);
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
}

/** Distinct SQL texts kept prepared; the hot path uses a few dozen, so the bound only matters for odd workloads. */
const PREPARED_CACHE_SIZE = 500;

/**
 * knex's better-sqlite3 client prepares every statement anew; this keeps prepared statements by SQL text (knex
 * builds the same text for the same query shape, values are bound). A statement is reusable once it has run,
 * which on this synchronous driver is before prepare() is called again. Schema changes (migrations) invalidate
 * prepared statements, so the cache is emptied whenever a statement that is not a read or a plain write runs.
 */
function cachePreparedStatements(conn: { prepare: (sql: string) => unknown }): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let st = cache.get(sql);
    if (st !== undefined) return st;
    st = prepare(sql);
    if (!/^\s*(select|insert|update|delete|with)\b/i.test(sql)) {
      cache.clear();
      return st;
    }
    if (cache.size >= PREPARED_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(sql, st);
    return st;
  };
}

/**
 * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. The transaction boundary of
 * a multi-statement write is the caller's (billing settles a call and closes its row in one), so the store hands
 * the transaction out rather than hiding it; inside, `fn` passes `tx` to the store functions as their Db.
 */
export function inTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(fn);
}

export async function migrate(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource });
}

/** Reachability probe for health: a trivial query with a deadline. */
export async function pingDb(db: Db, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      db.raw('select 1'),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
