import { HeldTransaction } from './held-transaction.js';
import { createRequire } from 'node:module';
import { startCheckpointer } from '../checkpointer.js';
import { pollDataVersion } from '../other-writers.js';
import { tuneConnection, type GroupCommitStats, type RawConnection } from '../sqlite-connection.js';
import { ObservedDriver } from './observed-driver.js';
import type { Driver, Row, Sql, Writes } from './types.js';

/** better-sqlite3's Database as used here. */
type OpenDatabase = new (
  filename: string,
  options?: { fileMustExist?: boolean },
) => RawConnection & {
  pragma(sql: string): unknown;
};
const Database = createRequire(import.meta.url)('better-sqlite3') as OpenDatabase;

export interface SqliteDriverOptions {
  filename: string;
  /** Writes outside transactions share one commit (store/sqlite-connection.ts). */
  groupCommit: boolean;
  /** With groupCommit: how long a group stays open (ms); 0 commits at the end of the turn of the event loop. */
  groupCommitWindowMs: number;
  /** Called when another connection committed (PRAGMA data_version, store/other-writers.ts). */
  onOtherWriter?: () => void;
  onCommitError(err: unknown): void;
  onCheckpointError(err: unknown): void;
}

/** How often the switch checkpoints its WAL (store/checkpointer.ts). */
const CHECKPOINT_INTERVAL_MS = 200;
/** WAL pages after which the writer checkpoints itself: the WAL stays under ~16 MB. */
const WRITER_CHECKPOINT_PAGES = 4000;

let txSeq = 0;

/** Values as SQLite takes them: booleans as 0/1, dates as epoch ms, undefined as null. */
function bindable(params: readonly unknown[]): unknown[] {
  const out = new Array<unknown>(params.length);
  for (let i = 0; i < params.length; i++) {
    const b = params[i];
    out[i] = typeof b === 'boolean' ? (b ? 1 : 0) : b instanceof Date ? b.valueOf() : b === undefined ? null : b;
  }
  return out;
}

/**
 * The store's one SQLite connection, better-sqlite3 on the event loop: a statement runs synchronously in
 * microseconds, prepared once per text (store/sqlite-connection.ts), and writes outside transactions share a group
 * commit when asked. A transaction holds the connection while it runs (it may await between statements): every
 * statement from outside it waits for it to end, so nothing lands inside it by accident.
 */
export class SqliteDriver extends ObservedDriver implements Driver {
  readonly dialect = 'sqlite' as const;
  readonly filename: string;
  readonly #conn: RawConnection;
  readonly #flush: () => void;
  readonly #stats: GroupCommitStats;
  readonly #closers: (() => unknown)[] = [];
  /** Resolved when the transaction holding the connection ends. */
  #held: Promise<void> | undefined;
  #closed = false;
  #absorb: (() => void) | undefined;
  readonly #groupCommit: boolean;

  constructor(opts: SqliteDriverOptions) {
    super();
    this.filename = opts.filename;
    this.#groupCommit = opts.groupCommit;
    const conn = new Database(opts.filename);
    conn.pragma('journal_mode = WAL');
    conn.pragma('busy_timeout = 5000');
    conn.pragma('foreign_keys = ON');
    conn.pragma('synchronous = NORMAL');
    // Prepared before the group commit wraps the connection (store/other-writers.ts).
    if (opts.onOtherWriter) {
      const poll = pollDataVersion(conn, opts.onOtherWriter);
      this.#closers.push(() => poll.stop());
      this.#absorb = () => poll.absorb();
    }
    const tuned = tuneConnection(conn, opts.groupCommit, opts.onCommitError, opts.groupCommitWindowMs);
    if (opts.groupCommit) {
      // The switch: checkpoints run in a worker thread, not inside a COMMIT on the event loop; the writer's own is
      // a backstop that lets the WAL restart under continuous writes (store/checkpointer.ts).
      conn.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
      const checkpointer = startCheckpointer(opts.filename, CHECKPOINT_INTERVAL_MS, opts.onCheckpointError);
      this.#closers.push(() => checkpointer.stop());
    }
    this.#conn = conn;
    this.#flush = tuned.flush;
    this.#stats = tuned.stats;
  }

  get groupCommitStats(): GroupCommitStats {
    return this.#stats;
  }

  flush(): void {
    if (!this.#closed) this.#flush();
  }

  /** A statement of this process's other connection to the file (knex's) has run: its commit is not another writer's. */
  ownStatementRan(): void {
    if (!this.#closed) this.#absorb?.();
  }

  async all(sql: string, params: readonly unknown[] = [], writes?: Writes): Promise<Row[]> {
    await this.#free();
    return this.exec(sql, params, writes, undefined, true) as Row[];
  }

  async get(sql: string, params: readonly unknown[] = []): Promise<Row | undefined> {
    return (await this.all(sql, params))[0];
  }

  async run(sql: string, params: readonly unknown[] = [], writes?: Writes): Promise<number> {
    await this.#free();
    return this.exec(sql, params, writes, undefined, false) as number;
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    if (this.#held !== undefined) {
      const done = this.queue.enter();
      // Taken at once when free: no await between the check and the taking.
      while (this.#held !== undefined) await this.#held;
      done();
    }
    let release!: () => void;
    this.#held = new Promise<void>((r) => (release = r));
    const id = ++txSeq;
    const tx = new SqliteTransaction(this, id);
    try {
      this.#control('BEGIN', id);
      let result: T;
      try {
        result = await fn(tx);
      } catch (err) {
        tx.end();
        this.#end(id, 'ROLLBACK');
        throw err;
      }
      tx.end();
      this.#end(id, 'COMMIT');
      return result;
    } finally {
      this.#held = undefined;
      release();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#free();
    this.#closed = true;
    for (const c of this.#closers) await c();
    this.#conn.close();
  }

  /** Waits while a transaction holds the connection. */
  async #free(): Promise<void> {
    if (this.#held === undefined) return;
    const done = this.queue.enter();
    while (this.#held !== undefined) await this.#held;
    done();
  }

  #end(tx: number, verb: 'COMMIT' | 'ROLLBACK'): void {
    this.ending(tx, false);
    try {
      this.#control(verb, tx);
    } finally {
      this.ending(tx, true);
    }
  }

  /**
   * Transaction control. With group commit the transaction is a savepoint inside the group
   * (store/sqlite-connection.ts): no BEGIN or COMMIT of its own reaches SQLite, and none is traced.
   */
  #control(verb: 'BEGIN' | 'COMMIT' | 'ROLLBACK', tx: number): void {
    if (this.#closed) throw new Error('store: the store is closed');
    if (!this.#groupCommit) this.sending(verb, [], undefined, tx);
    this.#conn.prepare(verb).run();
  }

  /**
   * Closes the connection now, under any transaction still running, as at process exit: the open group commits,
   * the running transaction is undone.
   */
  abandon(): void {
    this.#closed = true;
    this.#conn.close();
  }

  /** Runs one statement now, on the connection (whoever holds it is the caller). */
  exec(sql: string, params: readonly unknown[], writes: Writes | undefined, tx: number | undefined, rows: boolean) {
    if (this.#closed) throw new Error('store: the store is closed');
    const bindings = bindable(params);
    const written = this.sending(sql, bindings, writes, tx);
    const st = this.#conn.prepare(sql);
    let result: unknown;
    if (rows || st.reader) {
      result = st.all(bindings);
      if (!rows) result = 0;
    } else {
      result = (st.run(bindings) as { changes: number }).changes;
    }
    this.ran(written, tx);
    return result;
  }

  /** A savepoint inside the transaction holding the connection. */
  savepoint(verb: 'SAVEPOINT' | 'RELEASE' | 'ROLLBACK TO', name: string): void {
    if (verb === 'ROLLBACK TO') {
      if (this.#conn.inTransaction) this.#conn.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
    } else this.#conn.exec(`${verb} ${name}`);
  }
}

/** A transaction of the writer connection: its statements run on it at once. */
class SqliteTransaction extends HeldTransaction {
  readonly dialect = 'sqlite' as const;

  constructor(
    readonly driver: SqliteDriver,
    id: number,
  ) {
    super(id);
  }

  protected async query(
    sql: string,
    params: readonly unknown[],
    writes: Writes | undefined,
    rows: boolean,
  ): Promise<Row[] | number> {
    return this.driver.exec(sql, params, writes, this.id, rows) as Row[] | number;
  }

  protected async savepoint(verb: 'SAVEPOINT' | 'RELEASE' | 'ROLLBACK TO', name: string): Promise<void> {
    this.driver.savepoint(verb, name);
  }
}
