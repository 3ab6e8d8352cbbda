import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { migrationSource } from './migrations/index.js';
import { openKnexPg, openKnexSqlite, type KnexBuilder, type KnexDb } from './knex.js';
import { SqliteDriver } from './driver/sqlite.js';
import { PgDriver } from './driver/pg.js';
import { SqliteReadPool } from './driver/read-pool.js';
import type { Driver, Sql } from './driver/types.js';
import type { GroupCommitStats } from './sqlite-connection.js';
import { announce, writeOutside } from './notices.js';
export { timeStatements } from './sqlite-connection.js';
export type { Sql } from './driver/types.js';
import { roomLogger } from '../kit/index.js';

const log = roomLogger('store');

/**
 * An open store. Callable as knex (`db('calls')`, `db.raw`) for migrations, the queries whose filters are built at
 * run time, and tests and tools that set rows up directly; the repository functions run their statements through
 * the store's driver (sqlOf). Its 'query' event tells every statement sent, the driver's and knex's.
 */
export type Db = KnexDb;
/** An open transaction: every store function that takes a Db takes one, and then runs inside it. */
export type Tx = Sql;

export interface DbOptions {
  /** postgres://… for PostgreSQL; empty for SQLite in dataDir. */
  databaseUrl: string;
  dataDir: string;
  /** SQLite file name inside dataDir (tests use their own). */
  sqliteFile?: string;
  /**
   * SQLite: writes outside transactions share one commit per turn of the event loop (store/sqlite-connection.ts).
   * For the switch, the one writer of its process; off for short-lived tools and for several stores writing one
   * file from one process (a store holding its batch would make the other wait on a loop it blocks).
   */
  groupCommit?: boolean;
  /**
   * With groupCommit: how long a group stays open for more writes before it commits (ms); 0 (the default) commits
   * at the end of the turn of the event loop. Readers on other connections see a write up to this much later,
   * except the API's, which commit the open group first (flushGroupCommit).
   */
  groupCommitWindowMs?: number;
  /** PostgreSQL: open every connection of the pool at once and keep them open (the switch); else on demand. */
  warmPool?: boolean;
  /**
   * The switch: writes made by other processes (the CLI, another node) drop this process's read cache
   * (store/read-cache.ts) within DATA_VERSION_POLL_MS on SQLite, at their commit on PostgreSQL (LISTEN on a
   * connection of its own; store/other-writers.ts). Without it they are seen when the cached rows expire.
   */
  watchOtherWriters?: boolean;
}

interface Opened {
  driver: Driver;
  /** SQLite: the database file. */
  filename?: string;
}

/**
 * Where a store object keeps its driver: a registered symbol, so that a second copy of this module in the process
 * (a test loading a store module afresh) finds it too.
 */
const OPENED = Symbol.for('simu.store.opened');
const opened = {
  get: (db: object): Opened | undefined => (db as { [OPENED]?: Opened })[OPENED],
};

function openedOf(db: object): Opened {
  const o = opened.get(db);
  if (o === undefined) throw new Error('store: not a store opened by openDb');
  return o;
}

/** The statements of `db`: the store's driver, or the transaction itself. */
export function sqlOf(db: Db | Tx): Sql {
  return opened.get(db)?.driver ?? (db as Sql);
}

export function isPostgres(db: Db | Tx): boolean {
  return sqlOf(db).dialect === 'pg';
}

/**
 * Opens the store. SQLite: one writer connection of the store's own (store/driver/sqlite.ts: better-sqlite3 on the
 * event loop, statements prepared once, writes outside transactions sharing a group commit, checkpoints in a worker
 * thread); reads that may be slow go to the read pool (openReadPool). PostgreSQL: a `pg` pool (store/driver/pg.ts).
 * docs/architecture.md, "The SQLite store inside the switch" and "The PostgreSQL store".
 */
export function openDb(opts: DbOptions): Db {
  // The store's own object is made once its driver is: notices of other writers name it.
  const self: { db?: Db } = {};
  const otherWriter = (table: string | undefined): void => {
    if (self.db) announce(self.db, writeOutside(table));
  };
  if (/^postgres(ql)?:\/\//.test(opts.databaseUrl)) {
    const driver = new PgDriver({
      connectionString: opts.databaseUrl,
      warm: opts.warmPool === true,
      onOtherWriter: opts.watchOtherWriters === true ? otherWriter : undefined,
      onListenError: (err) =>
        log.warn({ err }, 'store: the change listener lost its connection; listening again in a second'),
    });
    return (self.db = storeDb(openKnexPg(opts.databaseUrl), { driver }));
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const filename = path.join(opts.dataDir, opts.sqliteFile ?? 'simu.db');
  const driver = new SqliteDriver({
    filename,
    groupCommit: opts.groupCommit === true,
    groupCommitWindowMs: opts.groupCommitWindowMs ?? 0,
    onOtherWriter: opts.watchOtherWriters === true ? () => otherWriter(undefined) : undefined,
    onCommitError: (err) => log.error({ err }, 'store: a group commit failed; its writes are lost'),
    onCheckpointError: (err) => log.warn({ err }, 'store: a WAL checkpoint failed; the next one retries'),
  });
  return (self.db = storeDb(openKnexSqlite(filename), { driver, filename }));
}

/** knex's methods that only read. */
const READS = new Set(['select', 'first', 'pluck', 'columnInfo']);

interface KnexQuery {
  method?: string;
  __knexQueryUid?: string;
}

/**
 * The store object: knex's surface (for migrations, dynamic queries, tests) with the store's own lifecycle and
 * events. knex runs on a connection of its own, so on SQLite every knex statement first commits the driver's open
 * group (it sees every write so far, and never waits on the group's lock). A knex statement that may write is
 * announced: as a write to its table when it was built from `db(table)`, else as a write to any table.
 */
function storeDb(knex: KnexDb, o: Opened): Db {
  const events = new EventEmitter();
  const sqlite = o.driver instanceof SqliteDriver ? o.driver : undefined;
  /** Statements of builders made by `db(table)`, announced by their builder with the table. */
  const announced = new Set<string>();
  const knexWrite = (table: string | undefined, q: KnexQuery, done: boolean): void => {
    if (READS.has(q.method ?? '')) return;
    announce(db, { kind: 'write', table, columns: undefined, tx: undefined, done });
  };
  knex.on('query', (q: KnexQuery) => {
    o.driver.flush();
    if (q.__knexQueryUid !== undefined && announced.delete(q.__knexQueryUid)) return;
    knexWrite(undefined, q, false);
  });
  const ran = (q: KnexQuery): void => {
    sqlite?.ownStatementRan();
    if (q.__knexQueryUid !== undefined && announced.delete(`${q.__knexQueryUid}\ndone`)) return;
    knexWrite(undefined, q, true);
  };
  knex.on('query-response', (_r: unknown, q: KnexQuery) => ran(q));
  knex.on('query-error', (_e: unknown, q: KnexQuery) => ran(q));
  const builder = (...args: unknown[]): unknown => {
    const b = (knex as unknown as (...a: unknown[]) => KnexBuilder)(...args);
    const table = typeof args[0] === 'string' ? args[0].split(/\s+as\s+/i)[0]!.trim() : undefined;
    if (table === undefined) return b;
    // A builder's own events come before the instance's, with the same statement id.
    b.on('query', (q: KnexQuery) => {
      if (q.__knexQueryUid === undefined) return;
      announced.add(q.__knexQueryUid);
      announced.add(`${q.__knexQueryUid}\ndone`);
      knexWrite(table, q, false);
    });
    b.on('query-response', (_r: unknown, q: KnexQuery) => knexWrite(table, q, true));
    return b;
  };
  for (const e of ['query', 'query-response', 'query-error'])
    knex.on(e, (...args: unknown[]) => events.emit(e, ...args));
  o.driver.onWrite((n) => announce(db, n));
  // The driver's statements reach 'query' listeners only while there are some.
  let stopTrace: (() => void) | undefined;
  events.on('newListener', (e: string) => {
    if (e === 'query' && stopTrace === undefined)
      stopTrace = o.driver.onStatement((s) =>
        events.emit('query', { sql: s.sql, bindings: s.bindings, tx: s.tx, method: 'raw' }),
      );
  });
  events.on('removeListener', (e: string) => {
    if (e === 'query' && events.listenerCount('query') === 0) {
      stopTrace?.();
      stopTrace = undefined;
    }
  });
  let closing: Promise<void> | undefined;
  const own: Record<string | symbol, unknown> = {
    [OPENED]: o,
    on: (e: string, fn: (...a: any[]) => void) => (events.on(e, fn), db),
    once: (e: string, fn: (...a: any[]) => void) => (events.once(e, fn), db),
    off: (e: string, fn: (...a: any[]) => void) => (events.off(e, fn), db),
    removeListener: (e: string, fn: (...a: any[]) => void) => (events.off(e, fn), db),
    addListener: (e: string, fn: (...a: any[]) => void) => (events.on(e, fn), db),
    listenerCount: (e: string) => events.listenerCount(e),
    destroy: () =>
      (closing ??= (async () => {
        await o.driver.close();
        await knex.destroy();
      })()),
  };
  const db: Db = new Proxy(builder as unknown as Db, {
    apply: (_t, _this, args: unknown[]) => builder(...args),
    get: (_t, prop) => {
      if (Object.hasOwn(own, prop)) return own[prop];
      const v = Reflect.get(knex, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(knex) : v;
    },
  });
  return db;
}

/**
 * Commits the switch's open write group now (SQLite with a group commit window), so that a read on another
 * connection sees every write made so far: the API calls it before each request. A no-op elsewhere.
 */
export function flushGroupCommit(db: Db): void {
  opened.get(db)?.driver.flush();
}

/** The SQLite group commit's counters (store/sqlite-connection.ts); undefined for PostgreSQL. */
export function groupCommitStats(db: Db): GroupCommitStats | undefined {
  const d = opened.get(db)?.driver;
  return d instanceof SqliteDriver ? d.groupCommitStats : undefined;
}

/** PostgreSQL: the store's URL (for a connection of its own that listens); undefined on SQLite. */
export function pgConnectionString(db: Db): string | undefined {
  const d = opened.get(db)?.driver;
  return d instanceof PgDriver ? d.connectionString : undefined;
}

/** The store's driver (for the PostgreSQL pipelined settlement and the queue probe). */
export function driverOf(db: Db): Driver {
  return openedOf(db).driver;
}

/**
 * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. The transaction boundary of
 * a multi-statement write is the caller's (billing settles a call and closes its row in one), so the store hands
 * the transaction out rather than hiding it; inside, `fn` passes `tx` to the store functions as their Db. Inside a
 * transaction, a savepoint.
 */
export function inTransaction<T>(db: Db | Tx, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return sqlOf(db).transaction(fn);
}

/** The PostgreSQL advisory lock the migrations run under (any number; this one spells "simu"). */
const MIGRATION_LOCK = 0x73696d75;

/**
 * Brings the schema up to date. On PostgreSQL several nodes may start at once: the migrations run while this store
 * holds a transaction-scoped advisory lock on a connection of its driver's pool, so one node migrates while the
 * others wait for it, then find nothing left to do (knex's own lock table refuses a second migrator, and two
 * creating knex's tables on a fresh database collide).
 */
export async function migrate(db: Db): Promise<void> {
  if (!isPostgres(db)) {
    await db.migrate.latest({ migrationSource });
    return;
  }
  await sqlOf(db).transaction(async (tx) => {
    await tx.all('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
    await db.migrate.latest({ migrationSource });
  });
}

/**
 * Extra read-only SQLite connections in worker threads for the hot read paths (store/driver/read-pool.ts): a store
 * object whose statements go to them. PostgreSQL already has a pool: undefined there, and for a store in memory.
 */
export function openReadPool(db: Db, size = 4): Db | undefined {
  const filename = opened.get(db)?.filename;
  if (filename === undefined || filename === ':memory:') return undefined;
  return storeDb(openKnexSqlite(filename), { driver: new SqliteReadPool(filename, size), filename });
}

/** Reachability probe for health: a trivial query with a deadline. */
export async function pingDb(db: Db, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sqlOf(db).all('select 1'),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
