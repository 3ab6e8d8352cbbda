import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';

/** Documented values: media_format is `wav` (8 kHz 16-bit PCM); storage_backend is `local` (a file on disk). */
export type MediaFormat = 'wav';
export type StorageBackend = 'local';

export interface RecordingRow {
  id: string;
  account_id: string;
  call_id: string;
  call_sid: string;
  duration_seconds: number | null;
  size_bytes: number | null;
  media_format: MediaFormat;
  storage_backend: StorageBackend;
  storage_path: string | null;
  expires_at: string | null;
  deleted_at: string | null;
  media_deleted_at: string | null;
  created_at: string;
  /** A voicemail message's mailbox owner (store/voicemail.ts); null for other recordings. */
  end_user_id: string | null;
  /** `new` until the end-user listened to it, then `saved`; null for recordings that are not voicemail. */
  voicemail_status: 'new' | 'saved' | null;
}

const normalise = (r: any): RecordingRow => ({
  ...r,
  size_bytes: r.size_bytes == null ? null : Number(r.size_bytes),
  duration_seconds: r.duration_seconds == null ? null : Number(r.duration_seconds),
});

export interface NewRecording {
  account_id: string;
  call_id: string;
  call_sid: string;
  duration_seconds?: number | null;
  size_bytes?: number | null;
  storage_path: string;
  end_user_id?: string | null;
  voicemail_status?: 'new' | null;
  expires_at?: string | null;
  created_at?: string;
}

export async function insertRecording(db: Db, input: NewRecording): Promise<RecordingRow> {
  const row = {
    id: newId(),
    media_format: 'wav',
    storage_backend: 'local',
    duration_seconds: null,
    size_bytes: null,
    expires_at: null,
    ...input,
    created_at: input.created_at ?? nowIso(),
  };
  await insertRows(db, 'recordings', [row]);
  return normalise(await firstRow(db, 'select * from "recordings" where "id" = ? limit 1', [row.id]));
}

/** A recording the account can see: its own and not soft-deleted. */
export async function findRecording(db: Db, accountId: string, id: string): Promise<RecordingRow | undefined> {
  const r = await firstRow(
    db,
    'select * from "recordings" where "account_id" = ? and "id" = ? and "deleted_at" is null limit 1',
    [accountId, id],
  );
  return r ? normalise(r) : undefined;
}

/** By id alone, for the signed media URL (the signature, not an API key, scopes it). */
export async function findRecordingForMedia(db: Db, id: string): Promise<RecordingRow | undefined> {
  const r = await firstRow(
    db,
    'select * from "recordings" where "id" = ? and "deleted_at" is null and "media_deleted_at" is null limit 1',
    [id],
  );
  return r ? normalise(r) : undefined;
}

export async function listRecordings(
  db: Db,
  accountId: string,
  opts: { callId?: string; endUserId?: string; limit: number; offset: number },
): Promise<RecordingRow[]> {
  let where = '"account_id" = ? and "deleted_at" is null';
  const bindings: unknown[] = [accountId];
  if (opts.callId) {
    where += ' and "call_id" = ?';
    bindings.push(opts.callId);
  }
  if (opts.endUserId) {
    where += ' and "end_user_id" = ?';
    bindings.push(opts.endUserId);
  }
  const rows = await selectRows(
    db,
    `select * from "recordings" where ${where} order by "created_at" desc, "id" desc limit ? offset ?`,
    [...bindings, opts.limit, opts.offset],
  );
  return rows.map(normalise);
}

/** Soft delete: the row stays (for audit and the retention sweep), the customer no longer sees it. */
export async function softDeleteRecording(db: Db, accountId: string, id: string): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "recordings" set "deleted_at" = ? where "account_id" = ? and "id" = ? and "deleted_at" is null',
    [nowIso(), accountId, id],
    { table: 'recordings', columns: ['deleted_at'] },
  );
  return n > 0;
}
