import { EventCodes } from '../../events/index.js';
import type { ConferenceNoun, DialRecordMode, DialResult } from '../../verbs/index.js';
import type { ConferenceCall, LeaveReason, Member, ParticipantPort } from './conference-room.js';
import type { Conferences } from './conferences.js';
import { MixRecorder } from './mix-recorder.js';

/**
 * <Dial><Conference>: the call joins the account's conference of that name and stays until it hangs up (the Dial's
 * signal), is kicked (REST), or the conference ends (someone with endConferenceOnExit left); then the Dial ends
 * `completed` with the seconds it was in, and the document goes on (the action, or the next verb), as in TwiML.
 * A full conference (maxParticipants) is not joined: DIAL.0300 failed with reason CONFERENCE_FULL.
 */
export async function joinConference(
  conferences: Conferences,
  call: ConferenceCall,
  noun: ConferenceNoun,
  /**
   * The Dial's: `signal` (the call ends or moves on), `record` (any record-from-* records the conference as
   * `record="record-from-start"` does) and `timeLimit` (seconds the participant may stay).
   */
  dial: { signal: AbortSignal; record?: DialRecordMode; timeLimit?: number },
): Promise<DialResult> {
  const { signal } = dial;
  const record = noun.record === 'record-from-start' || (dial.record ?? 'do-not-record') !== 'do-not-record';
  const d = conferences.d;
  if (signal.aborted) return { status: 'failed', durationSeconds: 0 };
  let port: ParticipantPort;
  try {
    port = d.port(call.id);
  } catch (err) {
    // The call's media is gone or not the platform's now (MEDIA_NO_SESSION, MEDIA_LEG_BRIDGED): nothing to join.
    d.log.info({ err, call: call.sid }, 'conference: the call has no audio port');
    return { status: 'failed', durationSeconds: 0 };
  }
  const room = conferences.roomFor(call.accountId, noun.name);
  if (room.size >= noun.maxParticipants) {
    await call.emit(EventCodes.dialCompleted, {
      DialCallStatus: 'failed',
      DialCallDuration: 0,
      reason: 'CONFERENCE_FULL',
      ...room.about(),
    });
    return { status: 'failed', durationSeconds: 0 };
  }
  let leave: (reason: LeaveReason) => void = () => undefined;
  const left = new Promise<LeaveReason>((resolve) => (leave = resolve));
  const voice = room.mixer.add(call.id, { framing: 'payload', send: (frame) => port.send(frame) });
  voice.muted = noun.muted;
  const member: Member = {
    call,
    noun,
    voice,
    joinedAt: d.clock.now(),
    hold: false,
    waiting: !room.started,
    leave: (reason) => leave(reason),
    stopListening: port.onReceived((pcmu) => voice.hear(pcmu, 0)),
  };
  room.add(member);
  if (record && !room.recorder) {
    const recorder = new MixRecorder(conferences.recordingPath(room));
    room.recorder = { recorder, call };
    room.mixer.onMix = (mix) => recorder.take(mix);
  }
  const onAbort = (): void => leave('hangup');
  signal.addEventListener('abort', onAbort, { once: true });
  const limit = dial.timeLimit === undefined ? undefined : setTimeout(() => leave('time-limit'), dial.timeLimit * 1000);
  limit?.unref();
  try {
    await call.emit(EventCodes.conferenceJoined, { ...room.about(), muted: noun.muted });
    if (noun.startConferenceOnEnter) await room.start(call);
    if (member.waiting) conferences.playWaitAudio(room, member);
    else if (noun.beepOnEnter) room.beep();
    const reason = await left;
    await room.remove(member, reason);
    return { status: 'completed', durationSeconds: Math.round((d.clock.now() - member.joinedAt) / 1000) };
  } finally {
    signal.removeEventListener('abort', onAbort);
    clearTimeout(limit);
    // However the stay ended (an error on the way included), the call is out of the mix.
    await room.remove(member, 'hangup');
  }
}
