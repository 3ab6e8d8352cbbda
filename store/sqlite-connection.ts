/**
 * The store's one SQLite connection (better-sqlite3, synchronous), tuned for the call path:
 *
 * - Prepared statements are kept by SQL text: the store's statements are fixed texts with bound values.
 * - Group commit: a write outside any transaction does not commit on its own. It opens a transaction that every
 *   other such write of the same turn of the event loop joins, committed once right after the turn (setImmediate).
 *   A commit costs several times a write inside a transaction (docs/performance.md), so under load the
 *   concurrent calls' writes share commits instead of paying one each. The connection is the only writer of this
 *   process, and reads on it see the batch's writes at once; other connections (the read pool, the CLI) see them
 *   after the turn, before any new request is read. What a crash loses is at most the writes of the turn it
 *   happened in; an orderly exit (process 'exit', closing the store) commits them. Explicit transactions (the
 *   driver's BEGIN, the ledger's money moves) run as a savepoint inside the group and commit with it: atomic,
 *   durable at the end of the turn like every other write (see `control` below).
 */

/** Distinct SQL texts kept prepared; the hot path uses a few dozen, so the bound only matters for odd workloads. */
const PREPARED_CACHE_SIZE = 500;
/** The savepoint an explicit transaction runs as inside the group's transaction. */
const EXPLICIT = 'simu_explicit';
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
  /** Group commits that waited for an explicit transaction to end (it spanned turns of the event loop). */
  deferred: number;
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
export interface TunedConnection {
  readonly stats: GroupCommitStats;
  /** An explicit transaction holds the connection now: a statement from outside it must wait for it. */
  inExplicitTransaction(): boolean;
  /** Commits the open group now (one still running an explicit transaction commits when that ends). */
  flush(): void;
}

export function tuneConnection(
  conn: RawConnection,
  groupCommit: boolean,
  onError: (err: unknown) => void,
  windowMs = 0,
): TunedConnection {
  const stats: GroupCommitStats = { commits: 0, writes: 0, deferred: 0, failures: 0 };
  /** The group's own transaction is open. */
  let open = false;
  /** An explicit transaction is running as a savepoint inside it. */
  let nested = false;
  /** The turn ended while an explicit transaction ran: commit when it ends. */
  let commitDue = false;
  let grouped = 0;

  /** Commits the group; an explicit transaction still running defers it, unless the process is exiting. */
  const commit = (atExit = false): void => {
    if (!open) return;
    if (nested) {
      if (!atExit) {
        if (!commitDue) stats.deferred++;
        commitDue = true;
        return;
      }
      // Exiting halfway through an explicit transaction: its writes are undone, the group's other writes kept.
      try {
        conn.exec(`ROLLBACK TO ${EXPLICIT}`);
      } catch {
        // SQLite rolled back the whole group already; the COMMIT below finds no transaction.
      }
      nested = false;
    }
    open = false;
    commitDue = false;
    grouped = 0;
    try {
      const t0 = statementTimer === null ? 0n : process.hrtime.bigint();
      if (conn.inTransaction) conn.exec('COMMIT');
      if (statementTimer !== null) statementTimer('COMMIT (group)', Number(process.hrtime.bigint() - t0));
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
      // DDL or a PRAGMA: the batch is committed first, so they run as they always did.
      commit();
      return;
    }
    stats.writes++;
    if (!groupCommit) return;
    if (open) {
      if (++grouped >= MAX_GROUPED_WRITES && !nested) {
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
    if (windowMs > 0) setTimeout(commit, windowMs);
    else setImmediate(commit);
  };

  /**
   * With group commit, a top-level BEGIN / COMMIT / ROLLBACK becomes a savepoint inside the group: the explicit
   * transaction stays atomic (its ROLLBACK undoes exactly its writes) and its COMMIT joins the group's instead of
   * paying a commit of its own and closing the group early. The driver holds the one connection for the whole
   * transaction, so no other write interleaves with it; the group's commit waits for it to end.
   */
  const control = (sql: string): RawStatement | undefined => {
    if (!groupCommit) return undefined;
    const verb = /^\s*(BEGIN|COMMIT|END|ROLLBACK)\s*(TRANSACTION)?\s*;?\s*$/i.exec(sql)?.[1]?.toUpperCase();
    if (verb === undefined) return undefined;
    const run =
      verb === 'BEGIN'
        ? (): void => {
            if (nested) throw new Error('store: a transaction is already running on this connection');
            if (!open) openBatch();
            conn.exec(`SAVEPOINT ${EXPLICIT}`);
            nested = true;
          }
        : verb === 'ROLLBACK'
          ? (): void => {
              if (!nested) {
                if (conn.inTransaction) conn.exec('ROLLBACK');
                return;
              }
              nested = false;
              if (conn.inTransaction) conn.exec(`ROLLBACK TO ${EXPLICIT}; RELEASE ${EXPLICIT}`);
              else open = false; // SQLite rolled the whole group back (it does for some errors)
              if (commitDue) commit();
            }
          : (): void => {
              if (!nested) {
                if (conn.inTransaction) conn.exec('COMMIT');
                return;
              }
              nested = false;
              if (!conn.inTransaction) {
                open = false;
                throw new Error('store: the transaction was rolled back by SQLite before its commit');
              }
              conn.exec(`RELEASE ${EXPLICIT}`);
              if (commitDue) commit();
            };
    const st: RawStatement = {
      reader: false,
      run: () => (run(), { changes: 0 }),
      all: () => (run(), []),
      get: () => (run(), undefined),
      safeIntegers: () => st,
    };
    return st;
  };

  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, RawStatement>();
  conn.prepare = (sql: string): RawStatement => {
    let st = cache.get(sql);
    if (st === undefined) {
      const kind = kindOf(sql);
      st = control(sql) ?? wrap(prepare(sql), kind, before, sql);
      // Schema changes (DDL, PRAGMA) invalidate what is prepared and empty the cache; transaction control is kept.
      if (kind === 'other') cache.clear();
      else {
        if (cache.size >= PREPARED_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, st);
      }
    }
    return st;
  };

  const commitAtExit = () => commit(true);
  const close = conn.close.bind(conn);
  conn.close = () => {
    commit(true);
    openBatches.delete(commitAtExit);
    return close();
  };
  openBatches.add(commitAtExit);
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', commitAllOnExit);
  }
  return {
    stats,
    inExplicitTransaction: () => nested || (!groupCommit && conn.inTransaction),
    flush: () => commit(),
  };
}

/** Every tuned connection's commit: an orderly exit (process.exit, an uncaught exception) commits each batch. */
const openBatches = new Set<() => void>();
let exitHooked = false;
function commitAllOnExit(): void {
  for (const commit of openBatches) commit();
}

/** Where benches send each statement's execution time (ns) by SQL text; null (the default) costs one check. */
let statementTimer: ((sql: string, ns: number) => void) | null = null;

/** Times every statement of every tuned connection from now on (benches); null stops it. */
export function timeStatements(timer: ((sql: string, ns: number) => void) | null): void {
  statementTimer = timer;
}

/** The statement as the driver uses it (reader, run, all, get), with the group commit consulted before it runs. */
function wrap(st: RawStatement, kind: Kind, before: (kind: Kind) => void, sql: string): RawStatement {
  const timed =
    (call: (...args: unknown[]) => unknown) =>
    (...args: unknown[]): unknown => {
      before(kind);
      if (statementTimer === null) return call(...args);
      const t0 = process.hrtime.bigint();
      try {
        return call(...args);
      } finally {
        statementTimer(sql, Number(process.hrtime.bigint() - t0));
      }
    };
  const wrapped: RawStatement = {
    reader: st.reader,
    run: timed(st.run.bind(st)),
    all: timed(st.all.bind(st)),
    get: timed(st.get.bind(st)),
    safeIntegers: (on) => (st.safeIntegers(on), wrapped),
  };
  return wrapped;
}
