import type { Db } from './db.js';
import { firstRow, runSql, upsertRow } from './fixed-sql.js';

/** The last valid document a number's call-control webhook returned (migration 023; calls/prepaid/last-good-documents.ts). */
export interface LastGoodDocumentRow {
  account_id: string;
  number: string;
  url: string;
  document: string;
  fetched_at: string;
}

/** Keeps `row` as the number's last good document (one row per account and number, replaced). */
export async function saveLastGoodDocument(db: Db, row: LastGoodDocumentRow): Promise<void> {
  await upsertRow(db, 'last_good_documents', { ...row }, ['account_id', 'number']);
}

export async function findLastGoodDocument(
  db: Db,
  accountId: string,
  number: string,
): Promise<LastGoodDocumentRow | undefined> {
  return (await firstRow(db, 'select * from "last_good_documents" where "account_id" = ? and "number" = ? limit 1', [
    accountId,
    number,
  ])) as LastGoodDocumentRow | undefined;
}

/** Notes on the call's row that it ran its number's last known good document (the CDR's `served_from`). */
export async function markCallServedFrom(db: Db, callId: string, source: 'last_good'): Promise<void> {
  await runSql(db, 'update "calls" set "served_from" = ? where "id" = ?', [source, callId], {
    table: 'calls',
    columns: ['served_from'],
  });
}
