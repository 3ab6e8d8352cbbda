import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import knexFactory from 'knex';
import { isPostgres, type Db } from './db.js';

/**
 * Extra read-only SQLite connections for the hot read paths (authentication, calls list, get call, charts). The
 * store keeps one connection so that SQLite writes serialise cleanly (store/db.ts); with WAL, readers on their own
 * connections run beside it and beside each other, each seeing the last committed state, so a request never
 * waits behind another request's read. PostgreSQL already has a pool: no extra pool there.
 *
 * Each connection is a worker thread holding a better-sqlite3 connection: the read runs off the event loop, and in
 * the same SQLite library as the writer. (A second SQLite library in one process, node-sqlite3 as this pool was,
 * cannot see the writer's locks, since POSIX locks do not tell two connections of one process apart: each time
 * it opened the file it took the WAL's shared memory for abandoned and truncated it under the writer, which then
 * rebuilt its index or died of SIGBUS.) knex drives the workers through its own better-sqlite3 dialect: a
 * statement's all/run return a promise, which the dialect awaits.
 */
export function openReadPool(db: Db, size = 4): Db | undefined {
  if (isPostgres(db)) return undefined;
  const filename = (db.client.config.connection as { filename?: string } | undefined)?.filename;
  if (!filename || filename === ':memory:') return undefined;
  return knexFactory({
    client: WorkerReadClient,
    connection: { filename },
    useNullAsDefault: true,
    pool: { min: 0, max: size },
  } as unknown as Parameters<typeof knexFactory>[0]);
}

const requireHere = createRequire(import.meta.url);
const BetterSqliteClient = requireHere('knex/lib/dialects/better-sqlite3/index.js') as new (config: object) => object;

/** knex's better-sqlite3 dialect with connections that live in worker threads. */
class WorkerReadClient extends (BetterSqliteClient as new (config: object) => {
  connectionSettings: { filename: string };
}) {
  async acquireRawConnection(): Promise<WorkerConnection> {
    const c = new WorkerConnection(this.connectionSettings.filename);
    await c.ready;
    return c;
  }

  async destroyRawConnection(c: WorkerConnection): Promise<void> {
    await c.close();
  }
}

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

/** A statement whose read the dialect will await: knex asks `reader` to choose all() or run(). */
interface ProxyStatement {
  readonly reader: boolean;
  all(bindings: unknown[]): Promise<unknown>;
  run(bindings: unknown[]): Promise<unknown>;
  get(bindings: unknown[]): Promise<unknown>;
  safeIntegers(): ProxyStatement;
}

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

  prepare(sql: string): ProxyStatement {
    const call = (bindings: unknown[]) =>
      new Promise((resolve, reject) => {
        const id = ++this.#seq;
        this.#pending.set(id, { resolve, reject });
        this.#worker.postMessage({ id, sql, bindings: bindings ?? [] });
      });
    const st: ProxyStatement = {
      // A read-only pool: what is not a query fails in the worker (query_only) whichever way it is run.
      reader: /^\s*(select|with|values|explain|pragma\s+\w+\s*$)/i.test(sql),
      all: call,
      run: call,
      get: async (b) => ((await call(b)) as unknown[])[0],
      safeIntegers: () => st,
    };
    return st;
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}
