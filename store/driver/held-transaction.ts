import type { Dialect, Row, Sql, Writes } from './types.js';

let savepointSeq = 0;

/**
 * The handle of a transaction: its statements run on the connection it holds, until it ends; a transaction inside
 * it is a savepoint. A statement on a handle whose transaction has ended is refused, not run outside it.
 */
export abstract class HeldTransaction implements Sql {
  abstract readonly dialect: Dialect;
  #live = true;

  constructor(readonly id: number) {}

  /** Runs a statement on the held connection: its rows (`rows`) or how many rows it changed. */
  protected abstract query(
    sql: string,
    params: readonly unknown[],
    writes: Writes | undefined,
    rows: boolean,
  ): Promise<Row[] | number>;

  protected abstract savepoint(verb: 'SAVEPOINT' | 'RELEASE' | 'ROLLBACK TO', name: string): Promise<void>;

  end(): void {
    this.#live = false;
  }

  #check(): void {
    if (!this.#live) throw new Error('store: a statement on a transaction that has already ended');
  }

  async all(sql: string, params: readonly unknown[] = [], writes?: Writes): Promise<Row[]> {
    this.#check();
    return (await this.query(sql, params, writes, true)) as Row[];
  }

  async get(sql: string, params: readonly unknown[] = []): Promise<Row | undefined> {
    return (await this.all(sql, params))[0];
  }

  async run(sql: string, params: readonly unknown[] = [], writes?: Writes): Promise<number> {
    this.#check();
    return (await this.query(sql, params, writes, false)) as number;
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    this.#check();
    const name = `simu_nested_${++savepointSeq}`;
    await this.savepoint('SAVEPOINT', name);
    try {
      const result = await fn(this);
      await this.savepoint('RELEASE', name);
      return result;
    } catch (err) {
      await this.savepoint('ROLLBACK TO', name).catch(() => undefined);
      throw err;
    }
  }
}
