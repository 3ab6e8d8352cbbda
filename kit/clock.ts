/**
 * Time as an injected dependency (STYLE.md 4), one interface for the whole code: the SIP transaction machines,
 * the registrar's bindings, the security gate's sweeps, admission's CPS window, overload control and the credit
 * monitor all take a `Clock` (or the slice of it they use, `Pick<Clock, 'now'>` and the like), so tests drive
 * them with `ManualClock` instead of sleeping.
 */
export type TimerHandle = { readonly id: number };

/** A periodic job started by `every`; `cancel()` stops it and is safe to call twice. */
export interface Periodic {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds; since the epoch for `systemClock`. */
  now(): number;
  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /**
   * Runs `fn` every `ms` until cancelled (sweeps, polling, the credit monitor's tick). `name` says which job it
   * is, so a test can hold one back (`ManualClock.stall`) as a hung tick would be.
   */
  every(ms: number, fn: () => void, name?: string): Periodic;
}

let nextId = 1;

/** Wall-clock timers, unref'd so an idle process is not held open by them. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return Object.assign({ id: nextId++ }, { t });
  },
  clearTimeout(handle) {
    clearTimeout((handle as unknown as { t: NodeJS.Timeout }).t);
  },
  every(ms, fn) {
    const t = setInterval(fn, ms);
    t.unref();
    return { cancel: () => clearInterval(t) };
  },
};

type Job = { at: number; fn: () => void; everyMs?: number; name?: string };

/**
 * A clock that moves only when told to: during `advance` each due timer and periodic job fires at its own
 * instant, in time order (ties in the order they were set). The one fake clock of the tests (calls, media, billing,
 * security, the SIP stack); `sleep(clock, ms)` (kit/sleep.ts) on it resolves when `advance` passes its time.
 */
export class ManualClock implements Clock {
  #now: number;
  readonly #jobs = new Map<number, Job>();
  readonly #stalled = new Set<string>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = nextId++;
    this.#jobs.set(id, { at: this.#now + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.#jobs.delete(handle.id);
  }

  every(ms: number, fn: () => void, name?: string): Periodic {
    const id = nextId++;
    this.#jobs.set(id, { at: this.#now + ms, fn, everyMs: Math.max(1, ms), name });
    return { cancel: () => void this.#jobs.delete(id) };
  }

  /** From now on the periodic job called `name` comes due but does not run (a hung or crashed tick). */
  stall(name: string): void {
    this.#stalled.add(name);
  }

  /** Moves time forward by `ms`, firing each due timer and periodic job at its own instant. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let nextKey = -1;
      let nextAt = Infinity;
      for (const [id, j] of this.#jobs) {
        if (j.at <= end && (j.at < nextAt || (j.at === nextAt && id < nextKey))) {
          nextAt = j.at;
          nextKey = id;
        }
      }
      if (nextKey < 0) break;
      const job = this.#jobs.get(nextKey)!;
      this.#now = nextAt;
      if (job.everyMs === undefined) this.#jobs.delete(nextKey);
      else job.at += job.everyMs;
      if (job.name === undefined || !this.#stalled.has(job.name)) job.fn();
    }
    this.#now = end;
  }

  /** Timers and periodic jobs still set. */
  get pendingTimers(): number {
    return this.#jobs.size;
  }

  /** The names of the periodic jobs still set ('' for an unnamed one): a close() that cancels them all leaves []. */
  periodicJobs(): string[] {
    return [...this.#jobs.values()].filter((j) => j.everyMs !== undefined).map((j) => j.name ?? '');
  }
}
