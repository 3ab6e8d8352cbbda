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
 */
export function openDb(opts: DbOptions): Db {
  if (/^postgres(ql)?:\/\//.test(opts.databaseUrl)) {
    return knexFactory({ client: 'pg', connection: opts.databaseUrl, pool: { min: 0, max: 10 } });
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const filename = path.join(opts.dataDir, opts.sqliteFile ?? 'simu.db');
  return knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: any, done: (err: Error | null, conn: unknown) => void) => {
        conn.exec(
          'PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;',
          (err: Error | null) => done(err, conn),
        );
      },
    },
  });
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
