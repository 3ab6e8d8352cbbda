import type { Db } from './db.js';
import { nowIso } from './ids.js';
import type { RecordingRow } from './recordings.js';

/** What a phone's message-waiting indicator shows (RFC 3842 `Voice-Message: new/old`). */
export interface MailboxCounts {
  newMessages: number;
  oldMessages: number;
}

const live = (db: Db, accountId: string, endUserId: string) =>
  db('recordings')
    .where({ account_id: accountId, end_user_id: endUserId })
    .whereNotNull('voicemail_status')
    .whereNull('deleted_at')
    .whereNull('media_deleted_at');

/** New (not yet listened to) and saved messages of an end-user's mailbox. */
export async function mailboxCounts(db: Db, accountId: string, endUserId: string): Promise<MailboxCounts> {
  const rows: Array<{ voicemail_status: string; n: number | string }> = await live(db, accountId, endUserId)
    .select('voicemail_status')
    .count({ n: '*' })
    .groupBy('voicemail_status');
  const count = (s: string) => Number(rows.find((r) => r.voicemail_status === s)?.n ?? 0);
  return { newMessages: count('new'), oldMessages: count('saved') };
}

/** The mailbox's messages in the order they are played: new ones first, each group oldest first. */
export async function listMailbox(db: Db, accountId: string, endUserId: string, limit = 100): Promise<RecordingRow[]> {
  const rows = await live(db, accountId, endUserId)
    .orderBy([
      { column: 'voicemail_status', order: 'asc' }, // 'new' < 'saved'
      { column: 'created_at', order: 'asc' },
      { column: 'id', order: 'asc' },
    ])
    .limit(limit);
  return rows.map((r: any) => ({
    ...r,
    size_bytes: r.size_bytes == null ? null : Number(r.size_bytes),
    duration_seconds: r.duration_seconds == null ? null : Number(r.duration_seconds),
  }));
}

/** A message was listened to: it is no longer new. */
export async function markMessageHeard(db: Db, accountId: string, id: string): Promise<void> {
  await db('recordings').where({ account_id: accountId, id, voicemail_status: 'new' }).update({
    voicemail_status: 'saved',
  });
}

/** Deleted from the phone (*97): soft-deleted like an API delete, so the retention sweep removes its media. */
export async function deleteMessage(db: Db, accountId: string, id: string): Promise<boolean> {
  const n = await db('recordings')
    .where({ account_id: accountId, id })
    .whereNotNull('voicemail_status')
    .whereNull('deleted_at')
    .update({ deleted_at: nowIso() });
  return n > 0;
}
