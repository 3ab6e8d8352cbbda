import { EventCodes, ReasonCodes } from '../../events/index.js';
import { MediaError, mediaStorageFor } from '../../media/index.js';
import { systemClock } from '../../kit/index.js';
import { findPlayableAsset, type EndUserRow } from '../../store/index.js';
import { CALLER_LEG } from '../call-media.js';
import { keepRecording } from '../call-recording.js';
import type { FlowDeps } from '../flows/flow-deps.js';
import { answerCaller, type MailboxCaller } from './ivr-leg.js';

/** A message is at most this long; this much silence ends it; `#` ends it too. */
export const VOICEMAIL_LIMITS = { maxMessageSeconds: 120, silenceSeconds: 5, finishKey: '#' };

/** Shorter than this (the caller hung up at the beep) is no message. */
const MIN_MESSAGE_SECONDS = 0.5;

/** The greeting spoken (espeak-ng, media/tts.ts) when the end-user has no greeting asset. */
export function defaultGreeting(callee: Pick<EndUserRow, 'extension_number' | 'display_name'>): string {
  const who = callee.display_name.trim() || `extension ${callee.extension_number.split('').join(' ')}`;
  return `${who} is not available. Please leave a message after the tone.`;
}

/**
 * Voicemail: the caller nobody answered is answered by the switch, hears the end-user's
 * greeting (an account asset, else a spoken default) and a beep, and what it then says is recorded with the
 * Record verb's machinery (our IVR endpoint in rtpengine) until silence, `#`, the time limit or its hang-up. The
 * message is a Recording of the call (REC.0300) marked as the end-user's (`GET /api/recordings?end_user_uuid=`),
 * announced as VM.0300, and the end-user's phones get a message-summary NOTIFY (sip/message-waiting.ts).
 */
export async function leaveVoicemail(d: FlowDeps, c: MailboxCaller, callee: EndUserRow): Promise<void> {
  const row = c.call.life.row;
  const caller = await answerCaller(d, c).catch((e: unknown) => {
    d.log.warn({ err: e, call: row.sid }, 'voicemail could not answer the caller');
    return undefined;
  });
  if (!caller) {
    c.srv.send(480, 'Temporarily Unavailable');
    await c.call.end(c.call.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
    return;
  }
  try {
    await greet(d, row.account_id, row.id, callee, caller.gone);
    if (!caller.gone.aborted) await d.media.playBeep(row.id, CALLER_LEG, { signal: caller.gone });
    if (caller.gone.aborted) return;
    const finished = new AbortController();
    const unlisten = caller.digits.listen(({ digit }) => {
      if (digit === VOICEMAIL_LIMITS.finishKey) finished.abort();
    });
    const recording = await d.media
      .record(row.id, CALLER_LEG, {
        maxLengthSec: VOICEMAIL_LIMITS.maxMessageSeconds,
        silenceTimeoutSec: VOICEMAIL_LIMITS.silenceSeconds,
        signal: AbortSignal.any([caller.gone, finished.signal]),
      })
      .finally(unlisten);
    if (recording.durationSec < MIN_MESSAGE_SECONDS) return;
    const rec = await keepRecording(
      { db: d.db, clock: systemClock, recordingRetentionDays: d.config.recordings.retentionDays },
      c.call.life,
      recording,
      { end_user_id: callee.id, voicemail_status: 'new' },
    );
    await c.call.life.emit(EventCodes.voicemailLeft, {
      recordingUuid: rec.id,
      endUserUuid: callee.id,
      extension: callee.extension_number,
      duration: Math.round(recording.durationSec),
    });
    // Not awaited: a phone that subscribed and went away holds a NOTIFY up to timer F (32 s), not this caller.
    void d.sip.mwi.changed(row.account_id, callee.id).catch((e: unknown) => {
      d.log.info({ err: e, call: row.sid }, 'message-waiting NOTIFY failed');
    });
    if (!caller.gone.aborted) await d.media.say(row.id, CALLER_LEG, 'Thank you. Goodbye.', { signal: caller.gone });
  } catch (e) {
    if (!(e instanceof MediaError)) throw e;
    d.log.warn({ err: e, call: row.sid }, 'voicemail media failed');
  } finally {
    await caller.hangup();
  }
}

/** The greeting asset when the end-user set one and it is playable, else the spoken default. */
async function greet(d: FlowDeps, accountId: string, callId: string, callee: EndUserRow, signal: AbortSignal) {
  if (callee.voicemail_greeting) {
    const file = await findPlayableAsset(d.db, accountId, callee.voicemail_greeting, mediaStorageFor(d.config));
    if (file) return void (await d.media.playFile(callId, CALLER_LEG, file, { signal }));
  }
  await d.media.say(callId, CALLER_LEG, defaultGreeting(callee), { signal });
}
