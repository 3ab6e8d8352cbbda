import { FRAME_BYTES } from './audio-port.js';

/** Most audio a customer's server may queue ahead of what the caller has heard: 60 s. More is dropped. */
export const MAX_QUEUED_BYTES = 60 * 8000;
/** Most marks waiting at once; a server sending more has the extra ones ignored (never returned). */
export const MAX_PENDING_MARKS = 1000;

/**
 * The audio a bidirectional stream's server sent, waiting to be played to the caller at 8,000 bytes a second, with
 * the marks it placed between chunks (Twilio: a mark comes back once the audio before it has been played; `clear`
 * empties the queue and returns every mark still waiting). Pure state: the stream's ticker takes one frame at a
 * time, so it is tested without a clock.
 */
export class Playout {
  #chunks: Buffer[] = [];
  #queued = 0;
  /** Bytes taken from the queue since it started; a mark plays when this reaches its position. */
  #played = 0;
  #marks: { name: string; at: number }[] = [];
  dropped = 0;

  get queuedBytes(): number {
    return this.#queued;
  }

  get pendingMarks(): number {
    return this.#marks.length;
  }

  push(pcmu: Buffer): void {
    if (this.#queued + pcmu.length > MAX_QUEUED_BYTES) {
      this.dropped += pcmu.length;
      return;
    }
    this.#chunks.push(pcmu);
    this.#queued += pcmu.length;
  }

  mark(name: string): void {
    if (this.#marks.length >= MAX_PENDING_MARKS) return;
    this.#marks.push({ name, at: this.#played + this.#queued });
  }

  /** Empties the queue; answers the names of the marks that were waiting, in order. */
  clear(): string[] {
    this.#chunks = [];
    this.#played += this.#queued;
    this.#queued = 0;
    const names = this.#marks.map((m) => m.name);
    this.#marks = [];
    return names;
  }

  /** The next 20 ms frame (padded with silence at the end of the audio), or undefined when nothing is queued. */
  nextFrame(): Buffer | undefined {
    if (this.#queued === 0) return undefined;
    const frame = Buffer.alloc(FRAME_BYTES, 0xff);
    let at = 0;
    while (at < FRAME_BYTES && this.#chunks.length > 0) {
      const head = this.#chunks[0]!;
      const take = Math.min(head.length, FRAME_BYTES - at);
      head.copy(frame, at, 0, take);
      at += take;
      if (take === head.length) this.#chunks.shift();
      else this.#chunks[0] = head.subarray(take);
    }
    this.#queued -= at;
    this.#played += at;
    return frame;
  }

  /** Names of the marks whose audio has all been taken, removed from the queue. */
  takeReachedMarks(): string[] {
    const names: string[] = [];
    while (this.#marks.length > 0 && this.#marks[0]!.at <= this.#played) names.push(this.#marks.shift()!.name);
    return names;
  }
}
