import {
  notifyAll,
  QueueWatch,
  tableWrites,
  type QueueSample,
  type StatementTrace,
  type TableWrite,
  type WriteNotice,
  type Writes,
} from './types.js';

/**
 * What every driver keeps for its observers: the listeners of write notices and statement traces, and the waits
 * for a connection that sampleQueue reports. A driver announces through it; nobody else does.
 */
export abstract class ObservedDriver {
  readonly #writeListeners = new Set<(n: WriteNotice) => void>();
  readonly #statementListeners = new Set<(s: StatementTrace) => void>();
  /** Statements waiting for a connection. */
  protected readonly queue = new QueueWatch();

  onWrite(fn: (n: WriteNotice) => void): () => void {
    this.#writeListeners.add(fn);
    return () => void this.#writeListeners.delete(fn);
  }

  onStatement(fn: (s: StatementTrace) => void): () => void {
    this.#statementListeners.add(fn);
    return () => void this.#statementListeners.delete(fn);
  }

  sampleQueue(): QueueSample {
    return this.queue.sample();
  }

  /**
   * A statement is about to be sent: traced, and each table it writes announced as about to change. Returns those
   * tables; hand them to `ran` once the statement has run.
   */
  protected sending(
    sql: string,
    bindings: readonly unknown[],
    writes: Writes | undefined,
    tx: number | undefined,
  ): readonly TableWrite[] {
    if (this.#statementListeners.size > 0) notifyAll(this.#statementListeners, { sql, bindings, tx });
    const written = tableWrites(writes);
    for (const w of written) this.#notice(w, tx, false);
    return written;
  }

  /** The statement `sending` announced has run: its tables have changed. */
  protected ran(written: readonly TableWrite[], tx: number | undefined): void {
    for (const w of written) this.#notice(w, tx, true);
  }

  /** The transaction `tx` is about to commit or roll back (`done` false), or has. */
  protected ending(tx: number, done: boolean): void {
    notifyAll(this.#writeListeners, { kind: 'end', tx, done });
  }

  #notice(w: TableWrite, tx: number | undefined, done: boolean): void {
    if (this.#writeListeners.size > 0)
      notifyAll(this.#writeListeners, { kind: 'write', table: w.table, columns: w.columns, tx, done });
  }
}
