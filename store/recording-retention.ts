import type { Db } from './db.js';
import { nowIso } from './ids.js';

/** A recording whose audio is due to be removed: expired, or soft-deleted by the customer. */
export interface PurgeableRecording {
  id: string;
  account_id: string;
  storage_backend: string;
  storage_path: string | null;
}

/**
 * Recordings whose media must go: `expires_at` at or before `now`, or soft-deleted, and whose media is not yet
 * removed. ISO-8601 UTC strings compare in time order, so a string comparison is a time comparison.
 */
export async function findPurgeableRecordings(db: Db, now: Date, limit: number): Promise<PurgeableRecording[]> {
  return db('recordings')
    .select('id', 'account_id', 'storage_backend', 'storage_path')
    .whereNull('media_deleted_at')
    .where((q) => q.whereNotNull('deleted_at').orWhere('expires_at', '<=', nowIso(now)))
    .orderBy('created_at', 'asc')
    .limit(limit);
}

/** The row stays (duration, size and dates remain truthful); only `media_deleted_at` records that the audio went. */
export async function markRecordingMediaDeleted(db: Db, id: string, at: Date): Promise<void> {
  await db('recordings')
    .where({ id })
    .whereNull('media_deleted_at')
    .update({ media_deleted_at: nowIso(at) });
}

/** The days a new recording of this account is kept: its own setting, else the platform default. */
export async function recordingRetentionDaysFor(db: Db, accountId: string, platformDefault: number): Promise<number> {
  const r = await db('accounts').select('recording_retention_days').where({ id: accountId }).first();
  const own = r?.recording_retention_days;
  return own == null ? platformDefault : Number(own);
}
