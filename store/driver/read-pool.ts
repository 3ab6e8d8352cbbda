import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ObservedDriver } from './observed-driver.js';
import type { Driver, Row, Sql } from './types.js';

/**
 * Read-only SQLite connections in worker threads, for the hot read paths (authentication, calls list, get call,
 * charts): with WAL, readers on their own connections run beside the writer and beside each other, each seeing the
 * last committed state, off the event loop. Each worker holds a better-sqlite3 connection, the same SQLite library
 * as the writer: a second SQLite library in one process cannot see the writer's locks (POSIX locks do not tell two
 * connections of one process apart) and took the WAL's shared memory for abandoned, truncating it under the writer.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
try {
  db = new Database(workerData.filename, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  db.pragma('query_only = 1');
  parentPort.postMessage({ id: 0 });
} catch (e) {
  parentPort.postMessage({ id: 0, error: { message: String(e && e.message), code: e && e.code } });
}
const statements = new Map();
parentPort.on('message', ({ id, sql, bindings }) => {
  try {
    let st = statements.get(sql);
    if (st === undefined) {
      st = db.prepare(sql);
      if (statements.size >= 200) statements.delete(statements.keys().next().value);
      statements.set(sql, st);
    }
    const result = st.reader ? st.all(bindings) : st.run(bindings);
    parentPort.postMessage({ id, result });
  } catch (e) {
    parentPort.postMessage({ id, error: { message: String(e && e.message), code: e && e.code } });
  }
});
`;

const requireHere = createRequire(import.meta.url);

class WorkerConnection {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #seq = 0;
  readonly ready: Promise<unknown>;

  constructor(filename: string) {
    this.#worker = new Worker(WORKER, {
      eval: true,
      workerData: { filename, driver: requireHere.resolve('better-sqlite3') },
    });
    this.#worker.unref();
    this.ready = new Promise((resolve, reject) => this.#pending.set(0, { resolve, reject }));
    this.#worker.on('message', (m: { id: number; result?: unknown; error?: { message: string; code?: string } }) => {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
      else p.resolve(m.result);
    });
    const fail = (err: Error) => {
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', () => fail(new Error('store: the read connection ended')));
  }

  get busy(): number {
    return this.#pending.size;
  }

  query(sql: string, bindings: unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = ++this.#seq;
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, sql, bindings });
    });
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}

/** As the writer binds values: booleans as 0/1, dates as epoch ms, undefined as null. */
const bindable = (params: readonly unknown[]): unknown[] =>
  params.map((b) =>
    typeof b === 'boolean' ? (b ? 1 : 0) : b instanceof Date ? b.valueOf() : b === undefined ? null : b,
  );

/** `size` worker connections on `filename`, opened on demand; a statement goes to the least busy. */
export class SqliteReadPool extends ObservedDriver implements Driver {
  readonly dialect = 'sqlite' as const;
  readonly #filename: string;
  readonly #size: number;
  readonly #conns: Promise<WorkerConnection>[] = [];
  readonly #opened: WorkerConnection[] = [];

  constructor(filename: string, size: number) {
    super();
    this.#filename = filename;
    this.#size = size;
  }

  async #pick(): Promise<WorkerConnection> {
    const idle = this.#opened.find((c) => c.busy === 0);
    if (idle) return idle;
    if (this.#conns.length < this.#size) {
      const c = new WorkerConnection(this.#filename);
      const ready = c.ready.then(() => (this.#opened.push(c), c));
      this.#conns.push(ready);
      return ready;
    }
    const opened = await Promise.all(this.#conns);
    return opened.reduce((a, b) => (b.busy < a.busy ? b : a));
  }

  async all(sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    const bindings = bindable(params);
    this.sending(sql, bindings, undefined, undefined);
    const done = this.queue.enter();
    const conn = await this.#pick();
    done();
    return (await conn.query(sql, bindings)) as Row[];
  }

  async get(sql: string, params: readonly unknown[] = []): Promise<Row | undefined> {
    return (await this.all(sql, params))[0];
  }

  /** Refused by the connection (query_only). */
  async run(sql: string, params: readonly unknown[] = []): Promise<number> {
    await this.all(sql, params);
    return 0;
  }

  transaction<T>(_fn: (tx: Sql) => Promise<T>): Promise<T> {
    return Promise.reject(new Error('store: the read pool runs no transactions'));
  }

  flush(): void {}

  async close(): Promise<void> {
    const conns = await Promise.allSettled(this.#conns);
    for (const c of conns) if (c.status === 'fulfilled') await c.value.close();
  }
}
