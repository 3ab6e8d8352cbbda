/**
 * The store's own way to run SQL: one small interface over better-sqlite3 (store/driver/sqlite.ts) and a `pg` pool
 * (store/driver/pg.ts). Statements are fixed text with `?` placeholders (the texts hold `?` only as placeholders);
 * a statement that writes names what it writes, and the driver announces it (WriteNotice), so caches invalidate
 * from what was written rather than from reading SQL text.
 */

export type Row = Record<string, unknown>;
export type Dialect = 'sqlite' | 'pg';

/** A table a statement writes; `columns`: the only columns it sets (an update), when the writer knows them. */
export interface TableWrite {
  table: string;
  columns?: readonly string[];
}
/** What a statement writes: a table's name, one TableWrite, or several. */
export type Writes = string | TableWrite | readonly TableWrite[];

/**
 * What the driver announces as it runs statements. `write`: a statement that writes `table` is about to run
 * (`done` false) or has run (`done` true); `table` undefined means any table may have changed (a statement not run
 * by the driver: knex's, another process's). `end`: the transaction `tx` is about to commit or roll back, or has.
 */
export type WriteNotice =
  | {
      kind: 'write';
      table: string | undefined;
      columns: readonly string[] | undefined;
      tx: number | undefined;
      done: boolean;
    }
  | { kind: 'end'; tx: number; done: boolean };

/** A statement as run, for observers (tests count them, benches time them). */
export interface StatementTrace {
  sql: string;
  bindings: readonly unknown[];
  /** The transaction the statement runs in, if any. */
  tx: number | undefined;
}

/** What repository functions run statements on: the store itself, or a transaction of it. */
export interface Sql {
  readonly dialect: Dialect;
  /** The rows of a statement (a select, or a write with RETURNING). */
  all(sql: string, params?: readonly unknown[], writes?: Writes): Promise<Row[]>;
  /** The first row, or undefined. */
  get(sql: string, params?: readonly unknown[]): Promise<Row | undefined>;
  /** Runs a statement; how many rows it changed. */
  run(sql: string, params?: readonly unknown[], writes?: Writes): Promise<number>;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. Inside a transaction,
   * a savepoint.
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
}

/** How far behind the store is: statements waiting for a connection (overload control reads it). */
export interface QueueSample {
  pending: number;
  oldestWaitMs: number;
  maxWaitMs: number;
}

/** The store's connection(s): a root Sql with its lifecycle, notices and counters. */
export interface Driver extends Sql {
  /** Calls `fn` with every WriteNotice from now on; returns the unsubscribe. */
  onWrite(fn: (n: WriteNotice) => void): () => void;
  /** Calls `fn` with every statement as it is sent; returns the unsubscribe. */
  onStatement(fn: (s: StatementTrace) => void): () => void;
  /** Commits writes held for a group commit now (SQLite); a no-op elsewhere. */
  flush(): void;
  /** Statements waiting for a connection now, and the longest wait since the previous sample. */
  sampleQueue(): QueueSample;
  close(): Promise<void>;
}

/** Calls every listener; a listener's failure is its own. */
export function notifyAll<T>(listeners: Iterable<(v: T) => void>, v: T): void {
  for (const l of listeners) {
    try {
      l(v);
    } catch {
      // A listener that throws does not stop the statement or the other listeners.
    }
  }
}

/** The TableWrites of a statement's `writes`. */
export function tableWrites(w: Writes | undefined): readonly TableWrite[] {
  if (w === undefined) return [];
  if (typeof w === 'string') return [{ table: w }];
  return Array.isArray(w) ? (w as readonly TableWrite[]) : [w as TableWrite];
}

/** Tracks waits for a connection, for sampleQueue. */
export class QueueWatch {
  readonly #waiting = new Map<number, number>();
  #seq = 0;
  #maxWaitMs = 0;

  /** A statement starts waiting; call the function returned when it has its connection. */
  enter(): () => void {
    const id = ++this.#seq;
    this.#waiting.set(id, performance.now());
    return () => {
      const at = this.#waiting.get(id);
      if (at === undefined) return;
      this.#waiting.delete(id);
      this.#maxWaitMs = Math.max(this.#maxWaitMs, performance.now() - at);
    };
  }

  sample(): QueueSample {
    const oldest = this.#waiting.values().next();
    const s = {
      pending: this.#waiting.size,
      oldestWaitMs: oldest.done ? 0 : performance.now() - oldest.value,
      maxWaitMs: this.#maxWaitMs,
    };
    this.#maxWaitMs = 0;
    return s;
  }
}
