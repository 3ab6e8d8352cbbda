import { sqlOf, type Db, type Tx } from './db.js';
import type { Row, Writes } from './driver/types.js';

/**
 * Statement texts made once per shape (table and column list) for the store's driver (store/driver/): inserts and
 * keyed updates, which name the table they write so the driver announces it. The texts hold `?` only as
 * placeholders and double-quoted identifiers, valid on SQLite and PostgreSQL alike.
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

/** Runs a fixed SQL statement that returns nothing; `writes`: what it writes. */
export async function runSql(db: Db | Tx, sql: string, bindings: readonly unknown[], writes?: Writes): Promise<void> {
  await sqlOf(db).run(sql, bindings, writes);
}

/** Runs fixed SQL and returns its rows. */
export function selectRows(db: Db | Tx, sql: string, bindings: readonly unknown[]): Promise<Row[]> {
  return sqlOf(db).all(sql, bindings);
}

/** Runs a fixed SQL write and returns how many rows it changed. */
export function runSqlCount(db: Db | Tx, sql: string, bindings: readonly unknown[], writes: Writes): Promise<number> {
  return sqlOf(db).run(sql, bindings, writes);
}

/** Rows one statement of deleteInBatches removes. */
export const DELETE_BATCH = 2000;

/**
 * Deletes the rows of `table` that `where` selects, DELETE_BATCH at a time by `key` (the primary key's columns),
 * pausing after each batch as long as it took: on SQLite a statement holds the event loop, so a sweep of a month of
 * rows takes at most half of it and calls go on meanwhile. An aborted `signal` ends it after the batch in hand.
 * Returns how many.
 */
export async function deleteInBatches(
  db: Db | Tx,
  table: string,
  key: readonly string[],
  where: string,
  bindings: readonly unknown[],
  signal?: AbortSignal,
): Promise<number> {
  const cols = key.map(q).join(', ');
  const sql =
    `delete from ${q(table)} where ${key.length > 1 ? `(${cols})` : cols} in ` +
    `(select ${cols} from ${q(table)} where ${where} limit ${DELETE_BATCH})`;
  let total = 0;
  for (;;) {
    const began = performance.now();
    const n = await sqlOf(db).run(sql, bindings, table);
    total += n;
    if (n < DELETE_BATCH || signal?.aborted) return total;
    const took = performance.now() - began;
    await new Promise((r) => setTimeout(r, Math.min(Math.max(took, 1), 1000)));
  }
}

/** INSERT of rows that all have the columns of the first, in one statement. */
export async function insertRows(db: Db | Tx, table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]!);
  const sql = text(`i\n${table}\n${cols.join(',')}\n${rows.length}`, () => {
    const one = `(${cols.map(() => '?').join(', ')})`;
    return `insert into ${q(table)} (${cols.map(q).join(', ')}) values ${Array(rows.length).fill(one).join(', ')}`;
  });
  const bindings: unknown[] = [];
  for (const r of rows) for (const c of cols) bindings.push(r[c] === undefined ? null : r[c]);
  await sqlOf(db).run(sql, bindings, table);
}

/** A keyed row: `column` = `value`, optionally only while `guard` column is one of `guard.in` (a compare-and-set). */
export interface RowKey {
  column: string;
  value: unknown;
}
export interface RowGuard {
  column: string;
  in: readonly unknown[];
}

/** UPDATE of one row by a key column, optionally guarded; the row after the update (undefined when none matched). */
export async function updateRow(
  db: Db | Tx,
  table: string,
  key: RowKey,
  patch: Record<string, unknown>,
  opts: { guard?: RowGuard; returning?: boolean } = {},
): Promise<Row | undefined> {
  const { sql, bindings, cols } = updateText(table, key, patch, opts.guard, opts.returning === true);
  if (cols.length === 0)
    return opts.returning === true ? sqlOf(db).get(selectByKey(table, key), [key.value]) : undefined;
  const writes = { table, columns: cols };
  if (opts.returning !== true) {
    await sqlOf(db).run(sql, bindings, writes);
    return undefined;
  }
  return (await sqlOf(db).all(sql, bindings, writes))[0];
}

/**
 * As updateRow without RETURNING: how many rows changed (0 or 1). For a writer that knows the row already: on SQLite
 * a RETURNING costs about four times the update itself (an ephemeral table, and an object of every column).
 */
export async function updateRowCount(
  db: Db | Tx,
  table: string,
  key: RowKey,
  patch: Record<string, unknown>,
  guard?: RowGuard,
): Promise<number> {
  const { sql, bindings, cols } = updateText(table, key, patch, guard, false);
  if (cols.length === 0) return (await sqlOf(db).all(selectByKey(table, key), [key.value])).length;
  return sqlOf(db).run(sql, bindings, { table, columns: cols });
}

function selectByKey(table: string, key: RowKey): string {
  return text(`s\n${table}\n${key.column}`, () => `select * from ${q(table)} where ${q(key.column)} = ?`);
}

function updateText(
  table: string,
  key: RowKey,
  patch: Record<string, unknown>,
  guard: RowGuard | undefined,
  returning: boolean,
): { sql: string; bindings: unknown[]; cols: string[] } {
  const cols = Object.keys(patch).filter((c) => patch[c] !== undefined);
  const sql = text(
    `u\n${table}\n${cols.join(',')}\n${key.column}\n${guard?.column ?? ''}\n${guard?.in.length ?? 0}\n${returning}`,
    () =>
      `update ${q(table)} set ${cols.map((c) => `${q(c)} = ?`).join(', ')} where ${q(key.column)} = ?` +
      (guard ? ` and ${q(guard.column)} in (${guard.in.map(() => '?').join(', ')})` : '') +
      (returning ? ' returning *' : ''),
  );
  return { sql, bindings: [...cols.map((c) => patch[c]), key.value, ...(guard?.in ?? [])], cols };
}

/** The first row of fixed SQL, or undefined. */
export function firstRow(db: Db | Tx, sql: string, bindings: readonly unknown[]): Promise<Row | undefined> {
  return sqlOf(db).get(sql, bindings);
}

/**
 * INSERT of one row that replaces the row already there with the same `conflict` columns (every other column of
 * `row` is written over).
 */
export async function upsertRow(
  db: Db | Tx,
  table: string,
  row: Record<string, unknown>,
  conflict: readonly string[],
): Promise<void> {
  const cols = Object.keys(row);
  const sql = text(`m\n${table}\n${cols.join(',')}\n${conflict.join(',')}`, () => {
    const set = cols.filter((c) => !conflict.includes(c));
    return (
      `insert into ${q(table)} (${cols.map(q).join(', ')}) values (${cols.map(() => '?').join(', ')}) ` +
      `on conflict (${conflict.map(q).join(', ')}) ` +
      (set.length === 0 ? 'do nothing' : `do update set ${set.map((c) => `${q(c)} = excluded.${q(c)}`).join(', ')}`)
    );
  });
  await sqlOf(db).run(
    sql,
    cols.map((c) => (row[c] === undefined ? null : row[c])),
    table,
  );
}
