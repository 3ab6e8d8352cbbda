import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.js';
import { tuneConnection, type GroupCommitStats, type RawConnection } from './sqlite-connection.js';
import { startCheckpointer } from './checkpointer.js';
import { connectionOfHandle, directTransaction } from './direct-transaction.js';
import { pgTransaction } from './pg-transaction.js';
import { listenForChanges, pollDataVersion, reportOtherWrite, type PgDriver } from './other-writers.js';
import { forgetCached } from './read-cache.js';
export { timeStatements } from './sqlite-connection.js';
import { roomLogger } from '../kit/index.js';

const log = roomLogger('store');

export type Db = Knex;
/** An open transaction: every store function that takes a Db takes one, and then runs inside it. */
export type Tx = Knex.Transaction;

export interface DbOptions {
  /** postgres://… for PostgreSQL; empty for SQLite in dataDir. */
  databaseUrl: string;
  dataDir: string;
  /** SQLite file name inside dataDir (tests use their own). */
  sqliteFile?: string;
  /**
   * SQLite: writes outside transactions share one commit per turn of the event loop (store/sqlite-connection.ts).
   * For the switch, the one writer of its process; off for short-lived tools and for several connections writing
   * one file from one process (a connection holding its batch would make the other wait on a loop it blocks).
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
 * Reads that may be slow (the calls list, search) go to the read pool (store/read-pool.ts): better-sqlite3 in
 * worker threads, off the event loop. Writes outside transactions share one commit (group commit, up to
 * groupCommitWindowMs; store/sqlite-connection.ts). docs/architecture.md, "The SQLite store inside the switch".
 */
export function openDb(opts: DbOptions): Db {
  if (/^postgres(ql)?:\/\//.test(opts.databaseUrl)) {
    const warm = opts.warmPool === true;
    /** The server process ids of the pool's connections: their notifications are this process's own writes. */
    const ownBackends = new Set<number>();
    const pg = knexFactory({
      client: 'pg',
      connection: opts.databaseUrl,
      pool: {
        // The switch keeps every connection open: one opened on demand (a new server process, its authentication,
        // its statements prepared again) made the calls of a rising load wait tens of ms each for it, which overload
        // control read as the store's backlog and shed on.
        min: warm ? PG_POOL_MAX : 0,
        max: PG_POOL_MAX,
        // pg's pipeline mode, set while the new connection is idle: statements sent together go out at once
        // (store/pg-transaction.ts pgPipelinedTransaction); one at a time, as knex sends them, nothing changes.
        afterCreate: (
          conn: { pipeline?: boolean; processID?: number; once(e: 'end', fn: () => void): unknown },
          done: (err: Error | null, conn: unknown) => void,
        ) => {
          conn.pipeline = true;
          const pid = conn.processID;
          if (pid !== undefined) {
            ownBackends.add(pid);
            conn.once('end', () => ownBackends.delete(pid));
          }
          done(null, conn);
        },
      },
    });
    if (warm) {
      // Opened now, in the background: the pool opens connections only when asked for one.
      const client = pg.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): unknown };
      // Held until all are open (a connection released at once would be handed out again), then all released; one
      // that fails to open is opened on demand later.
      void Promise.allSettled(Array.from({ length: PG_POOL_MAX }, () => client.acquireConnection())).then((rs) => {
        for (const r of rs) if (r.status === 'fulfilled') client.releaseConnection(r.value);
      });
    }
    if (opts.watchOtherWriters === true) {
      const listener = listenForChanges(
        (pg.client as { driver: PgDriver }).driver,
        opts.databaseUrl,
        ownBackends,
        (table) => {
          forgetCached(pg, table);
          reportOtherWrite(pg, table);
        },
        (err) => log.warn({ err }, 'store: the change listener lost its connection; listening again in a second'),
      );
      // Closed with the pool (knex's destroy() is its client's).
      const client = pg.client as { destroy(cb?: unknown): Promise<void> };
      const destroy = client.destroy.bind(client);
      client.destroy = async (cb?: unknown) => {
        await listener.stop();
        return destroy(cb);
      };
    }
    return pg;
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const filename = path.join(opts.dataDir, opts.sqliteFile ?? 'simu.db');
  let stats: GroupCommitStats | undefined;
  const db = knexFactory({
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
          // Prepared before the group commit wraps the connection (store/other-writers.ts).
          const stopPolling =
            opts.watchOtherWriters === true
              ? pollDataVersion(conn as RawConnection, () => {
                  forgetCached(db, undefined);
                  reportOtherWrite(db, undefined);
                })
              : undefined;
          const tuned = tuneConnection(
            conn,
            opts.groupCommit === true,
            (err) => log.error({ err }, 'store: a group commit failed; its writes are lost'),
            opts.groupCommitWindowMs ?? 0,
          );
          flushers.set(db, tuned.flush);
          stats = tuned.stats;
          if (opts.groupCommit === true) {
            directConnections.set(db, () => (tuned.inExplicitTransaction() ? undefined : (conn as RawConnection)));
            directTransactions.set(db, (fn) => directTransaction(db, conn as RawConnection, fn));
          }
          if (opts.groupCommit === true) {
            // The switch: checkpoints run in a worker thread, not inside a COMMIT on the event loop. The writer's
            // own is a backstop that lets the WAL restart under continuous writes (store/checkpointer.ts).
            conn.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
            const checkpointer = startCheckpointer(filename, CHECKPOINT_INTERVAL_MS, (err) =>
              log.warn({ err }, 'store: a WAL checkpoint failed; the next one retries'),
            );
            const close = conn.close.bind(conn);
            conn.close = () => (void checkpointer.stop(), close());
          }
          if (stopPolling) {
            const close = conn.close.bind(conn);
            conn.close = () => (stopPolling(), close());
          }
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
  commitStats.set(db, () => stats);
  return db;
}

/** Connections of the PostgreSQL pool. */
const PG_POOL_MAX = 10;

/** How often the switch checkpoints its WAL (store/checkpointer.ts): a few hundred pages at a time under load. */
const CHECKPOINT_INTERVAL_MS = 200;
/** WAL pages after which the writer checkpoints itself (SQLite's default is 1,000): the WAL stays under ~16 MB. */
const WRITER_CHECKPOINT_PAGES = 4000;

const commitStats = new WeakMap<Db, () => GroupCommitStats | undefined>();
const directConnections = new WeakMap<Db, () => RawConnection | undefined>();
/** The switch's SQLite writer: transactions without knex's machinery (store/direct-transaction.ts). */
const directTransactions = new WeakMap<Db, <T>(fn: (tx: Db) => Promise<T>) => Promise<T>>();
const flushers = new WeakMap<Db, () => void>();

/**
 * Commits the switch's open write group now (SQLite with a group commit window), so that a read on another
 * connection sees every write made so far: the API calls it before each request. A no-op elsewhere.
 */
export function flushGroupCommit(db: Db): void {
  flushers.get(db)?.();
}

/**
 * The switch's SQLite connection itself, for statements run synchronously without knex (store/fixed-sql.ts), when
 * that is safe now: `db` is the root instance of a switch's store (group commit on) and no knex transaction holds
 * the connection (a statement from outside it would land inside it). Undefined otherwise: go through knex.
 */
export function directConnection(db: Db): RawConnection | undefined {
  return connectionOfHandle(db) ?? directConnections.get(db)?.();
}

/** The SQLite group commit's counters (store/sqlite-connection.ts); undefined for PostgreSQL. */
export function groupCommitStats(db: Db): GroupCommitStats | undefined {
  return commitStats.get(db)?.();
}

/**
 * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. The transaction boundary of
 * a multi-statement write is the caller's (billing settles a call and closes its row in one), so the store hands
 * the transaction out rather than hiding it; inside, `fn` passes `tx` to the store functions as their Db.
 */
export function inTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const direct = directTransactions.get(db);
  if (direct !== undefined) return direct(fn as unknown as (tx: Db) => Promise<T>);
  // PostgreSQL: on a pool connection without knex's transaction machinery (store/pg-transaction.ts); a transaction
  // inside one is its savepoint.
  if (isPostgres(db)) {
    const nested = (db as { isTransaction?: boolean }).isTransaction === true;
    return nested ? db.transaction(fn) : pgTransaction(db, fn as unknown as (tx: Db) => Promise<T>);
  }
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
