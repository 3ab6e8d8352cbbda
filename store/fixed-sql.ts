import type { Knex } from 'knex';
import { directConnection, type Db } from './db.js';
import { pgConnectionOfHandle, runPg, runPgPooled } from './pg-transaction.js';

/**
 * The call path's statements as fixed SQL text, without knex's query builder: building and compiling a query was
 * about a tenth of the switch's CPU under the carrier bench (tens of µs a statement, ~45 statements a call). The
 * text is made once per shape (table and column list) and run through `db.raw`, so transactions, knex's 'query'
 * events (the read cache's invalidation, the benches' counters), binding conversion and both dialects (SQLite and
 * PostgreSQL: double-quoted identifiers, `?` placeholders, RETURNING) stay exactly as with the builder.
 *
 * On the switch's SQLite store the statement skips knex altogether when nothing holds the connection
 * (store/db.ts directConnection): prepared once, run synchronously, group commit and the 'query' event as knex
 * would do them. On PostgreSQL it runs as a named prepared statement on a connection of knex's pool, or on the
 * connection of the transaction it is in, without knex's runner (store/pg-transaction.ts). Inside a knex
 * transaction (SQLite outside the switch) it goes through knex. The texts hold `?` only as placeholders.
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

/** Runs fixed SQL: rows for a statement that returns them, else the driver's run result. */
async function exec(db: Db, sql: string, bindings: unknown[]): Promise<unknown> {
  const conn = directConnection(db);
  if (conn === undefined) {
    const held = pgConnectionOfHandle(db);
    if (held !== undefined) return runPg(db, held, sql, bindings, true);
    const pg = db.client.config.client === 'pg' && (db as { isTransaction?: boolean }).isTransaction !== true;
    return pg ? runPgPooled(db, sql, bindings) : db.raw(sql, bindings as Knex.RawBinding[]);
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

/** Runs a fixed SQL statement; the driver's result (better-sqlite3's `changes`, pg's `rowCount`). */
export function runSqlResult(db: Db, sql: string, bindings: readonly unknown[]): Promise<unknown> {
  return exec(db, sql, [...bindings]);
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
  const res = await updateRowRaw(db, table, key, patch, opts.guard, opts.returning === true);
  return opts.returning === true ? rowsOf(res)[0] : undefined;
}

/**
 * As updateRow without RETURNING: how many rows changed (0 or 1). For a writer that knows the row already: on SQLite
 * a RETURNING costs about four times the update itself (an ephemeral table, and an object of every column).
 */
export async function updateRowCount(
  db: Db,
  table: string,
  key: { column: string; value: unknown },
  patch: Record<string, unknown>,
  guard?: { column: string; in: readonly unknown[] },
): Promise<number> {
  return changedRows(await updateRowRaw(db, table, key, patch, guard, false), table);
}

/** Runs a fixed SQL write and returns how many rows it changed. */
export async function runSqlCount(db: Db, sql: string, bindings: readonly unknown[], what: string): Promise<number> {
  return changedRows(await exec(db, sql, [...bindings]), what);
}

function changedRows(result: unknown, what: string): number {
  const res = result as { changes?: number; rowCount?: number } | undefined;
  // better-sqlite3 (directly or through knex) tells `changes`, pg `rowCount`.
  const n = res?.changes ?? res?.rowCount;
  if (typeof n !== 'number') throw new Error(`no count of changed rows from the driver for a write of ${what}`);
  return n;
}

function updateRowRaw(
  db: Db,
  table: string,
  key: { column: string; value: unknown },
  patch: Record<string, unknown>,
  guard: { column: string; in: readonly unknown[] } | undefined,
  returning: boolean,
): Promise<unknown> {
  const cols = Object.keys(patch).filter((c) => patch[c] !== undefined);
  const sql = text(
    `u\n${table}\n${cols.join(',')}\n${key.column}\n${guard?.column ?? ''}\n${guard?.in.length ?? 0}\n${returning}`,
    () =>
      `update ${q(table)} set ${cols.map((c) => `${q(c)} = ?`).join(', ')} where ${q(key.column)} = ?` +
      (guard ? ` and ${q(guard.column)} in (${guard.in.map(() => '?').join(', ')})` : '') +
      (returning ? ' returning *' : ''),
  );
  const bindings = [...cols.map((c) => patch[c]), key.value, ...(guard?.in ?? [])];
  return exec(db, sql, bindings);
}
