/**
 * The store's one SQLite connection (better-sqlite3, synchronous), tuned for the call path:
 *
 * - Prepared statements are kept by SQL text: knex's better-sqlite3 client prepares every statement anew, and knex
 *   builds the same text for the same query shape (values are bound).
 * - Group commit: a write outside any transaction does not commit on its own. It opens a transaction that every
 *   other such write of the same turn of the event loop joins, committed once right after the turn (setImmediate).
 *   A commit costs about 80 µs of appending to the WAL, a write inside a transaction about 20 µs, so under load the
 *   concurrent calls' writes share commits instead of paying one each. The connection is the only writer of this
 *   process, and reads on it see the batch's writes at once; other connections (the read pool, the CLI) see them
 *   after the turn, before any new request is read. What a crash loses is at most the writes of the turn it
 *   happened in; an orderly exit (process 'exit', closing the store) commits them. Explicit transactions (knex's
 *   BEGIN, the ledger's money moves) first commit the open batch, then run as before and commit at once.
 */

/** Distinct SQL texts kept prepared; the hot path uses a few dozen, so the bound only matters for odd workloads. */
const PREPARED_CACHE_SIZE = 500;
/** Writes in one group commit at most; a longer turn commits early and opens the next. */
const MAX_GROUPED_WRITES = 2000;

interface RawStatement {
  readonly reader: boolean;
  run(...args: unknown[]): unknown;
  all(...args: unknown[]): unknown;
  get(...args: unknown[]): unknown;
  safeIntegers(on?: boolean): RawStatement;
}

export interface RawConnection {
  prepare(sql: string): RawStatement;
  exec(sql: string): unknown;
  close(): unknown;
  readonly inTransaction: boolean;
}

/** Counters of the group commit, for benches and tests. */
export interface GroupCommitStats {
  /** Group commits made. */
  commits: number;
  /** Writes that went into them. */
  writes: number;
  /** Group commits that failed (their writes are lost; logged by the caller's logger through onError). */
  failures: number;
}

type Kind = 'read' | 'write' | 'begin' | 'end' | 'other';

function kindOf(sql: string): Kind {
  const m = /^\s*(\w+)/.exec(sql);
  switch (m?.[1]?.toLowerCase()) {
    case 'select':
    case 'with':
      return /\b(insert|update|delete)\b/i.test(sql) ? 'write' : 'read';
    case 'insert':
    case 'update':
    case 'delete':
    case 'replace':
      return 'write';
    case 'begin':
    case 'savepoint':
      return 'begin';
    case 'commit':
    case 'rollback':
    case 'release':
    case 'end':
      return 'end';
    default:
      return 'other';
  }
}

/** Tunes a freshly opened connection in place (group commit when asked); returns the group commit's counters. */
export function tuneConnection(
  conn: RawConnection,
  groupCommit: boolean,
  onError: (err: unknown) => void,
): GroupCommitStats {
  const stats: GroupCommitStats = { commits: 0, writes: 0, failures: 0 };
  let open = false;
  let grouped = 0;

  const commit = (): void => {
    if (!open) return;
    open = false;
    grouped = 0;
    try {
      if (conn.inTransaction) conn.exec('COMMIT');
      stats.commits++;
    } catch (err) {
      stats.failures++;
      try {
        if (conn.inTransaction) conn.exec('ROLLBACK');
      } catch {
        // Already rolled back by SQLite.
      }
      onError(err);
    }
  };

  const before = (kind: Kind): void => {
    if (kind === 'read' || kind === 'end') return;
    if (kind !== 'write') {
      // A transaction of its own, DDL or a PRAGMA: the batch is committed first, so they run as they always did.
      commit();
      return;
    }
    stats.writes++;
    if (!groupCommit) return;
    if (open) {
      if (++grouped >= MAX_GROUPED_WRITES) {
        commit();
        openBatch();
      }
      return;
    }
    if (!conn.inTransaction) openBatch(); // inside an explicit transaction the write is simply part of it
  };

  const openBatch = (): void => {
    conn.exec('BEGIN');
    open = true;
    grouped = 1;
    setImmediate(commit);
  };

  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, RawStatement>();
  conn.prepare = (sql: string): RawStatement => {
    let st = cache.get(sql);
    if (st === undefined) {
      const kind = kindOf(sql);
      st = wrap(prepare(sql), kind, before);
      // Schema changes (DDL, PRAGMA) invalidate what is prepared and empty the cache; transaction control is kept.
      if (kind === 'other') cache.clear();
      else {
        if (cache.size >= PREPARED_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, st);
      }
    }
    return st;
  };

  const close = conn.close.bind(conn);
  conn.close = () => {
    commit();
    openBatches.delete(commit);
    return close();
  };
  openBatches.add(commit);
  if (openBatches.size === 1) process.once('exit', commitAllOnExit);
  return stats;
}

/** Every tuned connection's commit: an orderly exit (process.exit, an uncaught exception) commits each batch. */
const openBatches = new Set<() => void>();
function commitAllOnExit(): void {
  for (const commit of openBatches) commit();
}

/** The statement as knex uses it (reader, run, all, get), with the group commit consulted before it runs. */
function wrap(st: RawStatement, kind: Kind, before: (kind: Kind) => void): RawStatement {
  const wrapped: RawStatement = {
    reader: st.reader,
    run: (...args) => (before(kind), st.run(...args)),
    all: (...args) => (before(kind), st.all(...args)),
    get: (...args) => (before(kind), st.get(...args)),
    safeIntegers: (on) => (st.safeIntegers(on), wrapped),
  };
  return wrapped;
}
