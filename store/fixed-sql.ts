import type { Knex } from 'knex';
import { directConnection, type Db } from './db.js';

/**
 * The call path's statements as fixed SQL text, without knex's query builder: building and compiling a query was
 * about a tenth of the switch's CPU under the carrier bench (tens of µs a statement, ~45 statements a call). The
 * text is made once per shape (table and column list) and run through `db.raw`, so transactions, knex's 'query'
 * events (the read cache's invalidation, the benches' counters), binding conversion and both dialects (SQLite and
 * PostgreSQL: double-quoted identifiers, `?` placeholders, RETURNING) stay exactly as with the builder.
 *
 * On the switch's SQLite store the statement skips knex altogether when nothing holds the connection
 * (store/db.ts directConnection): prepared once, run synchronously, group commit and the 'query' event as knex
 * would do them. On PostgreSQL outside a transaction it runs on a connection of knex's pool without knex's raw
 * runner (execPg). Inside a transaction it goes through knex. The texts hold `?` only as placeholders.
 */
const texts = new Map<string, string>();

function text(key: string, make: () => string): string {
  let sql = texts.get(key);
  if (sql === undefined) {
    sql = make();
    if (texts.size < 1000) texts.set(key, sql);
  }
  return sql;
}

const q = (name: string): string => `"${name}"`;

/** Rows of a raw statement, whichever the dialect (better-sqlite3 gives the rows, pg a result holding them). */
export function rowsOf(res: unknown): Record<string, unknown>[] {
  if (Array.isArray(res)) return res as Record<string, unknown>[];
  return ((res as { rows?: Record<string, unknown>[] } | undefined)?.rows ?? []) as Record<string, unknown>[];
}

/** A pg connection as knex's pool hands it out. */
interface PgConnection {
  __knexUid?: string;
  query(q: { text: string; values: unknown[] }, cb: (err: Error | null, res: unknown) => void): void;
}

interface PgPool {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(c: PgConnection): Promise<unknown>;
}

/** Fixed SQL in PostgreSQL's placeholders ($1, $2 ...): the texts hold `?` only as placeholders. */
function pgText(sql: string): string {
  return text(`pg\n${sql}`, () => {
    let n = 0;
    return sql.replace(/\?/g, () => `$${++n}`);
  });
}

/**
 * Runs fixed SQL on PostgreSQL outside a transaction on a connection of knex's pool, without knex's raw query
 * machinery (placeholder rewriting, runner and builder per statement: about 3 ms of the switch's CPU per carrier
 * call). The pool, and knex's 'query', 'query-response' and 'query-error' events (the read cache's invalidation,
 * the benches' counters) stay as knex has them. A transaction's statements go through knex (its connection).
 */
async function execPg(db: Db, sql: string, bindings: unknown[]): Promise<unknown> {
  const pool = db.client as unknown as PgPool;
  const emitter = db as unknown as { emit(e: string, ...a: unknown[]): void };
  const conn = await pool.acquireConnection();
  const q = { sql, bindings, method: 'raw', __knexUid: conn.__knexUid };
  try {
    emitter.emit('query', q);
    const res = await new Promise<unknown>((resolve, reject) =>
      conn.query({ text: pgText(sql), values: bindings }, (err, r) => (err ? reject(err) : resolve(r))),
    );
    emitter.emit('query-response', res, q);
    return res;
  } catch (err) {
    emitter.emit('query-error', err, q);
    throw err;
  } finally {
    await pool.releaseConnection(conn);
  }
}

/** Runs fixed SQL: rows for a statement that returns them, else the driver's run result. */
async function exec(db: Db, sql: string, bindings: unknown[]): Promise<unknown> {
  const conn = directConnection(db);
  if (conn === undefined) {
    const pg = db.client.config.client === 'pg' && (db as { isTransaction?: boolean }).isTransaction !== true;
    return pg ? execPg(db, sql, bindings) : db.raw(sql, bindings as Knex.RawBinding[]);
  }
  // As knex's better-sqlite3 client binds: booleans as 0/1, dates as epoch ms.
  for (let i = 0; i < bindings.length; i++) {
    const b = bindings[i];
    if (typeof b === 'boolean') bindings[i] = b ? 1 : 0;
    else if (b instanceof Date) bindings[i] = b.valueOf();
  }
  (db as unknown as { emit(e: string, q: object): void }).emit('query', { sql, bindings, method: 'raw' });
  const st = conn.prepare(sql);
  return st.reader ? st.all(bindings) : st.run(bindings);
}

/** Runs a fixed SQL statement that returns nothing. */
export async function runSql(db: Db, sql: string, bindings: readonly unknown[]): Promise<void> {
  await exec(db, sql, [...bindings]);
}

/** Runs fixed SQL and returns its rows. */
export async function selectRows(
  db: Db,
  sql: string,
  bindings: readonly unknown[],
): Promise<Record<string, unknown>[]> {
  return rowsOf(await exec(db, sql, [...bindings]));
}

/** INSERT of rows that all have the columns of the first, in one statement. */
export async function insertRows(db: Db, table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]!);
  const sql = text(`i\n${table}\n${cols.join(',')}\n${rows.length}`, () => {
    const one = `(${cols.map(() => '?').join(', ')})`;
    return `insert into ${q(table)} (${cols.map(q).join(', ')}) values ${Array(rows.length).fill(one).join(', ')}`;
  });
  const bindings: unknown[] = [];
  for (const r of rows) for (const c of cols) bindings.push(r[c] === undefined ? null : r[c]);
  await exec(db, sql, bindings);
}

/**
 * UPDATE of one row by a key column, optionally only while `guard` column is one of `guardIn` (a compare-and-set);
 * `returning` gives the row after the update (undefined when no row matched), else undefined.
 */
export async function updateRow(
  db: Db,
  table: string,
  key: { column: string; value: unknown },
  patch: Record<string, unknown>,
  opts: { guard?: { column: string; in: readonly unknown[] }; returning?: boolean } = {},
): Promise<Record<string, unknown> | undefined> {
  const cols = Object.keys(patch).filter((c) => patch[c] !== undefined);
  const guard = opts.guard;
  const sql = text(
    `u\n${table}\n${cols.join(',')}\n${key.column}\n${guard?.column ?? ''}\n${guard?.in.length ?? 0}\n${opts.returning === true}`,
    () =>
      `update ${q(table)} set ${cols.map((c) => `${q(c)} = ?`).join(', ')} where ${q(key.column)} = ?` +
      (guard ? ` and ${q(guard.column)} in (${guard.in.map(() => '?').join(', ')})` : '') +
      (opts.returning === true ? ' returning *' : ''),
  );
  const bindings = [...cols.map((c) => patch[c]), key.value, ...(guard?.in ?? [])];
  const res = await exec(db, sql, bindings);
  return opts.returning === true ? rowsOf(res)[0] : undefined;
}
