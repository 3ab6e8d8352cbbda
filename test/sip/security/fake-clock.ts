import type { SecurityClock } from '../../../sip/security/index.js';

/** A clock the test moves by hand; `every` callbacks run as time passes their due times. */
export class FakeClock implements SecurityClock {
  #now: number;
  readonly #timers = new Set<{ ms: number; due: number; fn: () => void }>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  every(ms: number, fn: () => void): { cancel(): void } {
    const t = { ms, due: this.#now + ms, fn };
    this.#timers.add(t);
    return { cancel: () => this.#timers.delete(t) };
  }

  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: { ms: number; due: number; fn: () => void } | undefined;
      for (const t of this.#timers) if (t.due <= end && (!next || t.due < next.due)) next = t;
      if (!next) break;
      this.#now = next.due;
      next.due += next.ms;
      next.fn();
    }
    this.#now = end;
  }

  get timerCount(): number {
    return this.#timers.size;
  }
}
