import { EventCodes } from '../events/index.js';
import type { RecordingResult } from '../media/index.js';
import { insertRecording, recordingRetentionDaysFor } from '../store/index.js';
import type { CallServices } from './call-services.js';
import type { CallLifecycle } from './call-lifecycle.js';

/**
 * Stores a recording of the call (Record, or RecordSession at the end) with its expiry and announces it
 * (REC.0300). The account's own retention when the operator set one (`simu account retention`), else the
 * platform's.
 */
export async function keepRecording(
  d: Pick<CallServices, 'db' | 'clock' | 'recordingRetentionDays'>,
  life: CallLifecycle,
  r: RecordingResult,
  /** A voicemail message: the mailbox's end-user, and `new` (calls/voicemail/deposit.ts). */
  mailbox?: { end_user_id: string; voicemail_status: 'new' },
) {
  const row = life.row;
  const seconds = Math.round(r.durationSec);
  const days = await recordingRetentionDaysFor(d.db, row.account_id, d.recordingRetentionDays);
  const expires = new Date(d.clock.now() + days * 86400_000).toISOString();
  const rec = await insertRecording(d.db, {
    account_id: row.account_id,
    call_id: row.id,
    call_sid: row.sid,
    duration_seconds: seconds,
    size_bytes: r.sizeBytes,
    storage_path: r.path,
    expires_at: expires,
    ...mailbox,
  });
  await life.emit(EventCodes.recordingCompleted, { recordingUuid: rec.id, duration: seconds });
  return rec;
}
