/** One frame's length: 20 ms (160 bytes of 8 kHz mu-law). */
export const FRAME_MS = 20;
/** How long a track may go without audio before silence frames stand in for it: longer than a network's jitter. */
export const SILENCE_AFTER_MS = 60;

/**
 * The 20 ms clock of one track of a media stream. Agent code written for Twilio expects a media message every 20 ms
 * whether the caller speaks or not (its voice detection hears the end of speech in the silence); the caller's RTP
 * stops when the caller is silent (a phone that suppresses silence, a hold) or not yet connected. Once a track has
 * had no audio for SILENCE_AFTER_MS, it is owed a silence frame for every 20 ms slot since its last audio, until
 * audio arrives again.
 *
 * Only what is known to be silent is filled: up to the previous tick, not the current one. A timer that fires late
 * runs before the event loop reads the RTP that arrived meanwhile, so "nothing arrived" is only true of the time
 * before the last tick. Times are milliseconds on the stream's clock; pure state, tested without a clock.
 */
export class TrackClock {
  /** The track has audio (heard or filled) up to here. */
  #covered: number;
  #lastTick: number;
  /** Everything that arrived before this has been heard: the time of the tick before the latest one. */
  #known: number;
  #silent = false;

  constructor(startMs: number) {
    this.#covered = startMs;
    this.#lastTick = startMs;
    this.#known = startMs;
  }

  /** Audio of the track arrived at `nowMs`. */
  heard(nowMs: number): void {
    this.#covered = Math.max(this.#covered, nowMs);
    this.#silent = false;
  }

  /**
   * A tick of the 20 ms clock at `nowMs`: `fill` is called with the time of each silence frame owed, in order.
   * Several ticks at one time (a late timer catching up) count as one.
   */
  tick(nowMs: number, fill: (atMs: number) => void): void {
    if (nowMs !== this.#lastTick) {
      this.#known = this.#lastTick;
      this.#lastTick = nowMs;
    }
    if (!this.#silent && this.#known - this.#covered < SILENCE_AFTER_MS) return;
    this.#silent = true;
    while (this.#covered + FRAME_MS <= this.#known) {
      this.#covered += FRAME_MS;
      fill(this.#covered);
    }
  }
}
