import type { Db } from './db.js';
import { nowIso } from './ids.js';
import { firstRow, runSqlCount, selectRows } from './fixed-sql.js';

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
  return (await selectRows(
    db,
    'select "id", "account_id", "storage_backend", "storage_path" from "recordings" ' +
      'where "media_deleted_at" is null and ("deleted_at" is not null or "expires_at" <= ?) ' +
      'order by "created_at" asc limit ?',
    [nowIso(now), limit],
  )) as unknown as PurgeableRecording[];
}

/** The row stays (duration, size and dates remain truthful); only `media_deleted_at` records that the audio went. */
export async function markRecordingMediaDeleted(db: Db, id: string, at: Date): Promise<void> {
  await runSqlCount(
    db,
    'update "recordings" set "media_deleted_at" = ? where "id" = ? and "media_deleted_at" is null',
    [nowIso(at), id],
    { table: 'recordings', columns: ['media_deleted_at'] },
  );
}

/** The days a new recording of this account is kept: its own setting, else the platform default. */
export async function recordingRetentionDaysFor(db: Db, accountId: string, platformDefault: number): Promise<number> {
  const r = await firstRow(db, 'select "recording_retention_days" from "accounts" where "id" = ? limit 1', [accountId]);
  const own = r?.recording_retention_days;
  return own == null ? platformDefault : Number(own);
}
