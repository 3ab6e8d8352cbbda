import type { Db } from './db.js';

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
  await db('last_good_documents').insert(row).onConflict(['account_id', 'number']).merge();
}

export async function findLastGoodDocument(
  db: Db,
  accountId: string,
  number: string,
): Promise<LastGoodDocumentRow | undefined> {
  return (await db('last_good_documents').where({ account_id: accountId, number }).first()) as
    LastGoodDocumentRow | undefined;
}

/** Notes on the call's row that it ran its number's last known good document (the CDR's `served_from`). */
export async function markCallServedFrom(db: Db, callId: string, source: 'last_good'): Promise<void> {
  await db('calls').where({ id: callId }).update({ served_from: source });
}
