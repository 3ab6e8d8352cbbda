import { keepRecording } from '../call-recording.js';
import type { CallServices } from '../call-services.js';
import type { CallLifecycle } from '../call-lifecycle.js';
import type { ConferenceCall } from './conference-room.js';

/** A live call as a conference sees it: its ids, its event stream, and where its conference recording goes. */
export function conferenceCallOf(
  call: { readonly life: CallLifecycle },
  keep: Pick<CallServices, 'db' | 'clock' | 'recordingRetentionDays'>,
): ConferenceCall {
  const life = call.life;
  return {
    id: life.row.id,
    sid: life.row.sid,
    accountId: life.row.account_id,
    emit: (code, data) => life.emit(code, data),
    keepRecording: (r) => keepRecording(keep, life, r),
  };
}
