import { performance } from 'node:perf_hooks';

/** Most 20 ms ticks run at one wake-up when the timer was late: up to 100 ms of audio is caught up, no more. */
const MAX_CATCH_UP = 5;

/**
 * One 20 ms clock for every media stream (its silence frames, and on a <Connect><Stream> the audio to the caller),
 * instead of a timer each: one wake-up per tick for the process, aimed at a fixed grid (start + n x 20 ms) so
 * lateness does not accumulate, and a late wake-up runs the ticks it missed (up to MAX_CATCH_UP), so each caller
 * still gets 50 frames a second. Runs only while someone listens.
 */
export class FrameTicker {
  readonly #members = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #start = 0;
  #ticks = 0;

  /** The process's ticker. */
  static readonly shared = new FrameTicker();

  get size(): number {
    return this.#members.size;
  }

  /** Calls `onTick` every 20 ms until the returned function is called. */
  add(onTick: () => void): () => void {
    this.#members.add(onTick);
    if (this.#timer === undefined) {
      this.#start = performance.now();
      this.#ticks = 0;
      this.#schedule();
    }
    return () => {
      this.#members.delete(onTick);
      if (this.#members.size === 0 && this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  #schedule(): void {
    const next = this.#start + (this.#ticks + 1) * 20;
    this.#timer = setTimeout(() => this.#wake(), Math.max(0, next - performance.now()));
  }

  #wake(): void {
    const due = Math.floor((performance.now() - this.#start) / 20);
    let run = Math.min(due - this.#ticks, MAX_CATCH_UP);
    if (due - this.#ticks > MAX_CATCH_UP) this.#ticks = due - MAX_CATCH_UP; // further behind: skip, never burst
    for (; run > 0; run--) {
      this.#ticks += 1;
      for (const fn of this.#members) fn();
    }
    if (this.#members.size > 0) this.#schedule();
    else this.#timer = undefined;
  }
}
