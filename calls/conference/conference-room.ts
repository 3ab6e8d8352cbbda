import { randomBytes } from 'node:crypto';
import { EventCodes } from '../../events/index.js';
import type { Clock } from '../../kit/index.js';
import { ConferenceMixer, type MixerParticipant, type RecordingResult } from '../../media/index.js';
import type { ConferenceNoun } from '../../verbs/index.js';
import type { ConferenceView, ParticipantView } from './conference-control.js';
import type { MixRecorder } from './mix-recorder.js';

/** What a conference needs of a participant's call (LiveCall, through the engine; a fake in unit tests). */
export interface ConferenceCall {
  readonly id: string;
  readonly sid: string;
  readonly accountId: string;
  emit(code: (typeof EventCodes)[keyof typeof EventCodes], data: Record<string, unknown>): Promise<void>;
  /** Stores a finished conference recording as a recording of this call (REC.0300 on it). */
  keepRecording(r: RecordingResult): Promise<unknown>;
}

/** A participant's audio at the platform's end of its leg (media/streams/audio-port.ts, LegAudioPort). */
export interface ParticipantPort {
  onReceived(fn: (pcmu: Buffer) => void): () => void;
  send(pcmu: Buffer): boolean;
}

/** Why a participant left: its call ended or moved on, REST kick, the conference ended, the Dial's timeLimit. */
export type LeaveReason = 'hangup' | 'kicked' | 'conference-ended' | 'time-limit';

export interface Member {
  readonly call: ConferenceCall;
  readonly noun: ConferenceNoun;
  readonly voice: MixerParticipant;
  readonly joinedAt: number;
  hold: boolean;
  /** Waiting for the conference to start. */
  waiting: boolean;
  /** Resolves the member's stay (join.ts waits on it). */
  leave: (reason: LeaveReason) => void;
  /** Ends the wait/hold audio loop now playing to the member, if any. */
  stopWaitAudio?: () => void;
  stopListening: () => void;
}

/** A short 1,400 Hz tone (200 ms), laid over the mix when someone joins or leaves (`beep`). */
const BEEP = Int16Array.from({ length: 1600 }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 1400 * i) / 8000)));

/**
 * One conference of an account: its members (calls that dialled it), its mixer, and its state. It does not wait or
 * play anything itself: join.ts runs a member's stay and the wait audio; this class keeps the rules (who is heard,
 * when it starts and ends) and says so on each member's call (CONF.* events).
 */
export class ConferenceRoom {
  readonly sid = `CF${randomBytes(16).toString('hex')}`;
  readonly mixer = new ConferenceMixer();
  readonly #members = new Map<string, Member>();
  readonly createdAt: number;
  startedAt: number | undefined;
  ended = false;
  recorder: { recorder: MixRecorder; call: ConferenceCall } | undefined;

  constructor(
    readonly accountId: string,
    readonly name: string,
    readonly clock: Pick<Clock, 'now'>,
    /** Called once when the room ends (the registry forgets it and stops ticking its mixer). */
    readonly onEnd: (room: ConferenceRoom) => void,
  ) {
    this.createdAt = clock.now();
  }

  get size(): number {
    return this.#members.size;
  }

  get started(): boolean {
    return this.startedAt !== undefined;
  }

  member(callSid: string): Member | undefined {
    for (const m of this.#members.values()) if (m.call.sid === callSid) return m;
    return undefined;
  }

  members(): Member[] {
    return [...this.#members.values()];
  }

  add(member: Member): void {
    this.#members.set(member.call.id, member);
    this.#applyVoice(member);
  }

  /** The conference starts mixing: every waiting member stops hearing the wait audio and joins the mix. */
  async start(by: ConferenceCall): Promise<void> {
    if (this.started || this.ended) return;
    this.startedAt = this.clock.now();
    for (const m of this.#members.values()) {
      m.waiting = false;
      m.stopWaitAudio?.();
      this.#applyVoice(m);
    }
    await by.emit(EventCodes.conferenceStarted, this.#about());
  }

  setMuted(m: Member, muted: boolean): void {
    m.voice.muted = muted;
  }

  setHold(m: Member, hold: boolean): void {
    m.hold = hold;
    this.#applyVoice(m);
  }

  beep(): void {
    this.mixer.announce(BEEP);
  }

  /** Takes `m` out (its stay is over); ends the room when it was the last or had endConferenceOnExit. */
  async remove(m: Member, reason: LeaveReason): Promise<void> {
    if (this.#members.get(m.call.id) !== m) return;
    this.#members.delete(m.call.id);
    m.stopListening();
    m.stopWaitAudio?.();
    this.mixer.remove(m.call.id);
    const seconds = Math.round((this.clock.now() - m.joinedAt) / 1000);
    await m.call.emit(EventCodes.conferenceLeft, { ...this.#about(), reason, seconds });
    if (this.ended) return;
    if (m.noun.endConferenceOnExit || this.#members.size === 0) {
      await this.end(m.call);
      return;
    }
    if (m.noun.beepOnExit && this.started) this.beep();
  }

  /** Ends the conference: every member still in leaves ('conference-ended'); CONF.0300 on `by`'s call. */
  async end(by: ConferenceCall): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    for (const other of [...this.#members.values()]) other.leave('conference-ended');
    this.onEnd(this);
    const seconds = Math.round((this.clock.now() - (this.startedAt ?? this.createdAt)) / 1000);
    await by.emit(EventCodes.conferenceEnded, { ...this.#about(), seconds });
  }

  view(): ConferenceView {
    return {
      sid: this.sid,
      name: this.name,
      status: this.started ? 'in-progress' : 'waiting',
      createdAt: new Date(this.createdAt).toISOString(),
      startedAt: this.startedAt === undefined ? null : new Date(this.startedAt).toISOString(),
      participantCount: this.#members.size,
      recording: this.recorder !== undefined,
    };
  }

  participantView(m: Member): ParticipantView {
    return {
      callSid: m.call.sid,
      callUuid: m.call.id,
      muted: m.voice.muted,
      hold: m.hold,
      waiting: m.waiting,
      startConferenceOnEnter: m.noun.startConferenceOnEnter,
      endConferenceOnExit: m.noun.endConferenceOnExit,
      joinedAt: new Date(m.joinedAt).toISOString(),
    };
  }

  about(): Record<string, unknown> {
    return this.#about();
  }

  #about(): Record<string, unknown> {
    return { conferenceSid: this.sid, conferenceName: this.name, participants: this.#members.size };
  }

  /** Who the mixer hears and sends to: a waiting or held member neither hears the mix nor is heard. */
  #applyVoice(m: Member): void {
    m.voice.held = m.waiting || m.hold;
  }
}
