import { HeldTransaction } from './held-transaction.js';
import { Socket } from 'node:net';
import { createRequire } from 'node:module';
import { listenForChanges } from '../other-writers.js';
import { ObservedDriver } from './observed-driver.js';
import type { Driver, Row, Sql, Writes } from './types.js';

/** A pooled pg client as used here. */
interface PgClient {
  readonly processID?: number;
  query(q: { text: string; values: unknown[]; name?: string }): Promise<{ rows: Row[]; rowCount: number | null }>;
  release(err?: Error | boolean): void;
}
interface PgPool {
  connect(): Promise<PgClient>;
  query(q: { text: string; values: unknown[]; name?: string }): Promise<{ rows: Row[]; rowCount: number | null }>;
  end(): Promise<void>;
  readonly totalCount: number;
  readonly idleCount: number;
  on(event: 'connect', fn: (c: PgClient & { once(e: 'end', fn: () => void): unknown }) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
}
type ClientClass = new (options: object) => object;
interface PgLibrary {
  Client: ClientClass;
  Pool: new (options: {
    connectionString: string;
    max: number;
    min: number;
    idleTimeoutMillis: number;
    pipeline: boolean;
    Client: ClientClass;
  }) => PgPool;
}
const pg = createRequire(import.meta.url)('pg') as PgLibrary;

/** The socket of each pooled client, made by the driver through pg's `stream` option. */
const sockets = new WeakMap<object, Socket>();

/**
 * pg's Client, given its socket by the driver (pg's `stream` option, a factory), so that a pipelined transaction's
 * messages can be corked into one write (pg writes each message of each statement on its own).
 */
class SocketClient extends pg.Client {
  constructor(options: object) {
    let socket: Socket | undefined;
    super({ ...options, stream: () => (socket = new Socket()) });
    if (socket) sockets.set(this, socket);
  }
}

export interface PgDriverOptions {
  connectionString: string;
  /** Open every connection of the pool at once and keep them open (the switch); else on demand. */
  warm: boolean;
  /** Writes of other processes, by table (undefined: any table), through LISTEN (store/other-writers.ts). */
  onOtherWriter?: (table: string | undefined) => void;
  onListenError(err: unknown): void;
}

/** Connections of the pool. */
export const PG_POOL_MAX = 10;

/** Texts in PostgreSQL's placeholders, and the name each runs under, by the fixed text (`?` placeholders). */
const prepared = new Map<string, { text: string; name: string | undefined }>();
const MAX_PREPARED = 1000;
let names = 0;

function preparedOf(sql: string): { text: string; name: string | undefined } {
  let p = prepared.get(sql);
  if (p === undefined) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    // Statements without parameters (BEGIN, COMMIT) gain nothing from a name.
    p = { text, name: n > 0 && prepared.size < MAX_PREPARED ? `simu_${++names}` : undefined };
    if (prepared.size < MAX_PREPARED) prepared.set(sql, p);
  }
  return p;
}

/** PostgreSQL's "cached plan must not change result type": the table of a prepared statement changed. */
const isStalePlan = (err: { code?: string; message?: string }): boolean =>
  err.code === '0A000' && /cached plan/i.test(err.message ?? '');

/** One statement of a pipelined transaction, and what it writes. */
export interface PgStatement {
  sql: string;
  bindings: unknown[];
  writes?: Writes;
}

let txSeq = 0;

/**
 * PostgreSQL through a `pg` pool. Fixed texts run as named prepared statements: PostgreSQL parses and plans a text
 * once per connection instead of once per statement. A prepared `select *` whose table changed since (a migration in
 * the same process) fails with "cached plan must not change result type"; outside a transaction the statement runs
 * again under a new name, inside one the error goes to the caller and the next run takes the new name. Connections
 * are in pg's pipeline mode: statements sent together go out at once (pipelined), one at a time nothing changes.
 */
export class PgDriver extends ObservedDriver implements Driver {
  readonly dialect = 'pg' as const;
  /** The store's URL (a listener opens a connection of its own with it). */
  readonly connectionString: string;
  readonly #pool: PgPool;
  /** The server process ids of the pool's connections: their notifications are this process's own writes. */
  readonly #ownBackends = new Set<number>();
  readonly #listener: { stop(): Promise<void> } | undefined;
  #lastConnect: Promise<void> = Promise.resolve();

  constructor(opts: PgDriverOptions) {
    super();
    this.connectionString = opts.connectionString;
    this.#pool = new pg.Pool({
      connectionString: opts.connectionString,
      max: PG_POOL_MAX,
      // The switch keeps every connection open: one opened on demand (a new server process, its authentication,
      // its statements prepared again) made the calls of a rising load wait for it.
      min: opts.warm ? PG_POOL_MAX : 0,
      idleTimeoutMillis: opts.warm ? 0 : 10_000,
      pipeline: true,
      Client: SocketClient,
    });
    this.#pool.on('error', () => undefined); // an idle connection lost: the pool opens another when asked
    this.#pool.on('connect', (c) => {
      const pid = c.processID;
      if (pid === undefined) return;
      this.#ownBackends.add(pid);
      c.once('end', () => this.#ownBackends.delete(pid));
    });
    if (opts.warm) {
      // Opened now, in the background; held until all are open (one released at once would be handed out again).
      void Promise.allSettled(Array.from({ length: PG_POOL_MAX }, () => this.#pool.connect())).then((rs) => {
        for (const r of rs) if (r.status === 'fulfilled') r.value.release();
      });
    }
    this.#listener = opts.onOtherWriter
      ? listenForChanges(opts.connectionString, this.#ownBackends, opts.onOtherWriter, opts.onListenError)
      : undefined;
  }

  flush(): void {}

  /** Connections the pool holds open now, and how many of them are idle. */
  connections(): { total: number; idle: number } {
    return { total: this.#pool.totalCount, idle: this.#pool.idleCount };
  }

  async all(sql: string, params: readonly unknown[] = [], writes?: Writes): Promise<Row[]> {
    return (await this.#pooled(sql, params, writes)).rows;
  }

  async get(sql: string, params: readonly unknown[] = []): Promise<Row | undefined> {
    return (await this.all(sql, params))[0];
  }

  async run(sql: string, params: readonly unknown[] = [], writes?: Writes): Promise<number> {
    return (await this.#pooled(sql, params, writes)).rowCount ?? 0;
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    const conn = await this.#connect();
    const tx = new PgTransaction(this, conn, ++txSeq);
    let broken: Error | undefined;
    try {
      await this.send(conn, 'BEGIN', [], undefined, tx.id);
      let result: T;
      try {
        result = await fn(tx);
      } catch (err) {
        tx.end();
        await this.endTx(conn, tx.id, 'ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      }
      tx.end();
      await this.endTx(conn, tx.id, 'COMMIT');
      return result;
    } finally {
      conn.release(broken ?? false);
    }
  }

  /**
   * Runs `statements` as one transaction sent at once (BEGIN, each statement, COMMIT) on a pipelined connection:
   * one round trip for the lot, and whatever a statement locks is held only while PostgreSQL runs the statements
   * after it, never across a round trip. Each statement has its own snapshot (READ COMMITTED). Resolves to each
   * statement's rows; when one fails, the ones after it fail too, COMMIT rolls the transaction back, and the first
   * error is thrown.
   */
  async pipelined(statements: readonly PgStatement[]): Promise<Row[][]> {
    const conn = await this.#connect();
    const id = ++txSeq;
    // Every statement is handed to pg before anything awaits: corked, the lot leaves in one write.
    const socket = sockets.get(conn);
    socket?.cork();
    try {
      const sent = [
        this.send(conn, 'BEGIN', [], undefined, id),
        ...statements.map((s) => this.send(conn, s.sql, s.bindings, s.writes, id)),
      ];
      this.ending(id, false);
      sent.push(this.send(conn, 'COMMIT', [], undefined, id));
      socket?.uncork();
      const settled = await Promise.allSettled(sent);
      this.ending(id, true);
      const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
      return settled
        .slice(1, 1 + statements.length)
        .map((r) => (r as PromiseFulfilledResult<{ rows: Row[] }>).value.rows);
    } finally {
      if (socket?.writableCorked) socket.uncork();
      conn.release();
    }
  }

  async close(): Promise<void> {
    await this.#listener?.stop();
    await this.#pool.end();
  }

  /**
   * A connection of the pool, handed out in the order asked for: pg's pool gives a connection it opens to the asker
   * that made it open, so a later asker could take one released meanwhile and run first.
   */
  async #connect(): Promise<PgClient> {
    const done = this.queue.enter();
    const mine = this.#lastConnect.then(() => this.#pool.connect());
    this.#lastConnect = mine.then(
      () => undefined,
      () => undefined,
    );
    try {
      return await mine;
    } finally {
      done();
    }
  }

  async #pooled(sql: string, params: readonly unknown[], writes: Writes | undefined) {
    const conn = await this.#connect();
    try {
      return await this.send(conn, sql, params, writes, undefined);
    } finally {
      conn.release();
    }
  }

  async endTx(conn: PgClient, tx: number, verb: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    this.ending(tx, false);
    try {
      await this.send(conn, verb, [], undefined, tx);
    } finally {
      this.ending(tx, true);
    }
  }

  /** Sends one statement on `conn`; `tx`: the transaction it is in (a failed statement is not run again). */
  async send(conn: PgClient, sql: string, params: readonly unknown[], writes: Writes | undefined, tx?: number) {
    const values = params as unknown[];
    const written = this.sending(sql, values, writes, tx);
    const p = preparedOf(sql);
    let res;
    try {
      res = await conn.query({ text: p.text, values, ...(p.name && { name: p.name }) });
    } catch (err) {
      if (p.name === undefined || !isStalePlan(err as Error)) throw err;
      p.name = `simu_${++names}`;
      if (tx !== undefined) throw err;
      res = await conn.query({ text: p.text, values, name: p.name });
    }
    this.ran(written, tx);
    return res;
  }
}

/** A transaction of the pool: its statements go on the connection it holds. */
class PgTransaction extends HeldTransaction {
  readonly dialect = 'pg' as const;

  constructor(
    readonly driver: PgDriver,
    readonly conn: PgClient,
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
    const res = await this.driver.send(this.conn, sql, params, writes, this.id);
    return rows ? res.rows : (res.rowCount ?? 0);
  }

  protected async savepoint(verb: 'SAVEPOINT' | 'RELEASE' | 'ROLLBACK TO', name: string): Promise<void> {
    await this.driver.send(
      this.conn,
      verb === 'SAVEPOINT' ? `SAVEPOINT ${name}` : `${verb} SAVEPOINT ${name}`,
      [],
      undefined,
      this.id,
    );
  }
}
