import { quietLogger } from '../support/logger.js';
import type { MonitorTimers } from '../../billing/index.js';

/** Billing logs nothing in tests (a warning about a re-cut is expected there). */
export const quietLog = quietLogger;

/**
 * A hand-driven clock and interval source for the billing state machines: `advance(ms)` runs every interval that
 * falls due, in time order. `stall(name)` stops one named interval from firing (the monitor's tick, to prove the
 * watchdog), as a hung or crashed tick would.
 */
/** Where every FakeTimers starts (tests write store rows at this time). */
export const FAKE_EPOCH = Date.parse('2026-01-01T00:00:00.000Z');

export class FakeTimers implements MonitorTimers {
  #t: number;
  #seq = 0;
  readonly #intervals = new Map<number, { fn: () => void; ms: number; next: number; name: string }>();
  readonly #stalled = new Set<string>();

  constructor(start = FAKE_EPOCH) {
    this.#t = start;
  }

  now(): number {
    return this.#t;
  }

  every(ms: number, fn: () => void, name = ''): { cancel(): void } {
    const id = ++this.#seq;
    this.#intervals.set(id, { fn, ms, next: this.#t + ms, name });
    return { cancel: () => void this.#intervals.delete(id) };
  }

  stall(name: string): void {
    this.#stalled.add(name);
  }

  /** Names of the intervals currently set (to prove close() clears them). */
  active(): string[] {
    return [...this.#intervals.values()].map((i) => i.name);
  }

  advance(ms: number): void {
    const target = this.#t + ms;
    for (;;) {
      let due: { fn: () => void; ms: number; next: number; name: string } | undefined;
      for (const i of this.#intervals.values()) if (i.next <= target && (!due || i.next < due.next)) due = i;
      if (!due) break;
      this.#t = due.next;
      due.next += due.ms;
      if (!this.#stalled.has(due.name)) due.fn();
    }
    this.#t = target;
  }
}

/** Lets promises and store round-trips started by timer callbacks finish. */
export const flush = async (rounds = 5): Promise<void> => {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
};

/** Waits (real time, bounded) for store work started by a timer callback to show its effect. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}
