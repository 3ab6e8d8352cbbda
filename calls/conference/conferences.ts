import { join } from 'node:path';
import type { Logger } from '../../config/index.js';
import type { Clock } from '../../kit/index.js';
import { TickScheduler } from '../../media/index.js';
import type { ConferenceControl, ConferenceView, ParticipantView } from './conference-control.js';
import { ConferenceRoom, type Member, type ParticipantPort } from './conference-room.js';

/** What the conferences of a process need from the rest of the switch (the engine wires them; fakes in tests). */
export interface ConferencesDeps {
  log: Logger;
  clock: Pick<Clock, 'now'>;
  /** The caller's audio port of a call the platform answered (MediaService.audioPort on the caller's leg). */
  port(callId: string): ParticipantPort;
  /** Plays an audio URL to the caller once; resolves when played or stopped by `signal`. */
  playUrl(callId: string, url: string, signal: AbortSignal): Promise<void>;
  /** Where a conference's recording is written. */
  recordingsDir: string;
  /** The one 20 ms clock of every mixer (a default one is made). */
  scheduler?: TickScheduler;
}

/**
 * Every live conference of this process, by account and name, and the one TickScheduler that mixes them all
 * every 20 ms (media/mixer/). The API's ConferenceControl: list, participants, mute, hold, kick.
 */
export class Conferences implements ConferenceControl {
  readonly d: ConferencesDeps;
  readonly scheduler: TickScheduler;
  readonly #rooms = new Map<string, ConferenceRoom>();

  constructor(d: ConferencesDeps) {
    this.d = d;
    this.scheduler = d.scheduler ?? new TickScheduler();
  }

  /** The account's live conference called `name`, created (waiting, not yet mixing) when there is none. */
  roomFor(accountId: string, name: string): ConferenceRoom {
    const key = `${accountId}\u0000${name}`;
    const existing = this.#rooms.get(key);
    if (existing && !existing.ended) return existing;
    const room = new ConferenceRoom(accountId, name, this.d.clock, (r) => {
      if (this.#rooms.get(key) === r) this.#rooms.delete(key);
      this.scheduler.remove(r.mixer);
      void this.#finishRecording(r);
    });
    this.#rooms.set(key, room);
    this.scheduler.add(room.mixer);
    return room;
  }

  recordingPath(room: ConferenceRoom): string {
    return join(this.d.recordingsDir, `conference-${room.sid}.wav`);
  }

  async #finishRecording(room: ConferenceRoom): Promise<void> {
    const rec = room.recorder;
    if (!rec) return;
    room.recorder = undefined;
    room.mixer.onMix = undefined;
    try {
      const r = await rec.recorder.finish();
      await rec.call.keepRecording({ ...r, reason: 'stopped' });
    } catch (err) {
      this.d.log.warn({ err, conference: room.sid }, 'conference recording lost');
    }
  }

  get liveCount(): number {
    return this.#rooms.size;
  }

  list(accountId: string): ConferenceView[] {
    return [...this.#rooms.values()].filter((r) => r.accountId === accountId).map((r) => r.view());
  }

  find(accountId: string, sid: string): ConferenceView | undefined {
    return this.#room(accountId, sid)?.view();
  }

  participants(accountId: string, sid: string): ParticipantView[] | undefined {
    const room = this.#room(accountId, sid);
    return room?.members().map((m) => room.participantView(m));
  }

  update(
    accountId: string,
    sid: string,
    callSid: string,
    change: { muted?: boolean; hold?: boolean },
  ): ParticipantView | undefined {
    const room = this.#room(accountId, sid);
    const m = room?.member(callSid);
    if (!room || !m) return undefined;
    if (change.muted !== undefined) room.setMuted(m, change.muted);
    if (change.hold !== undefined && change.hold !== m.hold) {
      room.setHold(m, change.hold);
      if (change.hold) this.playWaitAudio(room, m);
      else if (!m.waiting) m.stopWaitAudio?.();
    }
    return room.participantView(m);
  }

  kick(accountId: string, sid: string, callSid: string): boolean {
    const m = this.#room(accountId, sid)?.member(callSid);
    m?.leave('kicked');
    return m !== undefined;
  }

  /** Loops the member's waitUrl to it (waiting to start, or on hold) until stopWaitAudio; silence without one. */
  playWaitAudio(room: ConferenceRoom, m: Member): void {
    const url = m.noun.waitUrl;
    if (url === undefined) return;
    m.stopWaitAudio?.();
    const ac = new AbortController();
    m.stopWaitAudio = () => ac.abort();
    void (async () => {
      while (!ac.signal.aborted && !room.ended) {
        try {
          await this.d.playUrl(m.call.id, url, ac.signal);
        } catch (err) {
          this.d.log.info({ err, call: m.call.sid, url }, 'conference wait audio not playable');
          return;
        }
      }
    })();
  }

  #room(accountId: string, sid: string): ConferenceRoom | undefined {
    for (const r of this.#rooms.values()) if (r.sid === sid && r.accountId === accountId) return r;
    return undefined;
  }
}
