import type { Db, Tx } from './db.js';
import { insertRows } from './fixed-sql.js';

/**
 * Inserts `rows` in the order given, `perInsert` rows to a statement (kept under the bound-parameter limits of both
 * stores). The usual batch (a group commit's, smaller than one statement) goes in as given, without a copy.
 */
export async function insertChunked(
  db: Db | Tx,
  table: string,
  rows: readonly object[],
  perInsert: number,
): Promise<void> {
  const all = rows as readonly Record<string, unknown>[];
  if (all.length <= perInsert) return insertRows(db, table, all);
  for (let i = 0; i < all.length; i += perInsert) await insertRows(db, table, all.slice(i, i + perInsert));
}
