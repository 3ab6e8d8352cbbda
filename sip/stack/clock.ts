/**
 * Time as an injected dependency (STYLE.md 4): the transaction state machines take a `Clock`, so tests drive
 * them with `ManualClock` instead of sleeping.
 */
export type TimerHandle = { readonly id: number };

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

let nextId = 1;

/** Wall-clock timers (unref'd so an idle stack does not hold the process open). */
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
};

/** A clock that moves only when told to; timers fire in due order during `advance`. */
export class ManualClock implements Clock {
  #now = 0;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = nextId++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle.id);
  }

  /** Moves time forward by `ms`, firing each due timer at its own instant. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let nextKey = -1;
      let nextAt = Infinity;
      for (const [id, t] of this.#timers) {
        if (t.at <= end && (t.at < nextAt || (t.at === nextAt && id < nextKey))) {
          nextAt = t.at;
          nextKey = id;
        }
      }
      if (nextKey < 0) break;
      const t = this.#timers.get(nextKey)!;
      this.#timers.delete(nextKey);
      this.#now = nextAt;
      t.fn();
    }
    this.#now = end;
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }
}
