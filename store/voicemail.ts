import type { Db } from './db.js';
import { nowIso } from './ids.js';
import { runSqlCount, selectRows } from './fixed-sql.js';
import type { RecordingRow } from './recordings.js';

/** What a phone's message-waiting indicator shows (RFC 3842 `Voice-Message: new/old`). */
export interface MailboxCounts {
  newMessages: number;
  oldMessages: number;
}

/** An end-user's messages still there: `?` account, `?` end-user. */
const LIVE =
  '"account_id" = ? and "end_user_id" = ? and "voicemail_status" is not null and "deleted_at" is null ' +
  'and "media_deleted_at" is null';

/** New (not yet listened to) and saved messages of an end-user's mailbox. */
export async function mailboxCounts(db: Db, accountId: string, endUserId: string): Promise<MailboxCounts> {
  const rows = (await selectRows(
    db,
    `select "voicemail_status", count(*) as "n" from "recordings" where ${LIVE} group by "voicemail_status"`,
    [accountId, endUserId],
  )) as Array<{ voicemail_status: string; n: number | string }>;
  const count = (s: string) => Number(rows.find((r) => r.voicemail_status === s)?.n ?? 0);
  return { newMessages: count('new'), oldMessages: count('saved') };
}

/** The mailbox's messages in the order they are played: new ones first, each group oldest first. */
export async function listMailbox(db: Db, accountId: string, endUserId: string, limit = 100): Promise<RecordingRow[]> {
  // 'new' < 'saved'
  const rows = await selectRows(
    db,
    `select * from "recordings" where ${LIVE} order by "voicemail_status" asc, "created_at" asc, "id" asc limit ?`,
    [accountId, endUserId, limit],
  );
  return rows.map((r: any) => ({
    ...r,
    size_bytes: r.size_bytes == null ? null : Number(r.size_bytes),
    duration_seconds: r.duration_seconds == null ? null : Number(r.duration_seconds),
  }));
}

/** A message was listened to: it is no longer new. */
export async function markMessageHeard(db: Db, accountId: string, id: string): Promise<void> {
  await runSqlCount(
    db,
    'update "recordings" set "voicemail_status" = ? where "account_id" = ? and "id" = ? and "voicemail_status" = ?',
    ['saved', accountId, id, 'new'],
    { table: 'recordings', columns: ['voicemail_status'] },
  );
}

/** Deleted from the phone (*97): soft-deleted like an API delete, so the retention sweep removes its media. */
export async function deleteMessage(db: Db, accountId: string, id: string): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "recordings" set "deleted_at" = ? where "account_id" = ? and "id" = ? ' +
      'and "voicemail_status" is not null and "deleted_at" is null',
    [nowIso(), accountId, id],
    { table: 'recordings', columns: ['deleted_at'] },
  );
  return n > 0;
}
