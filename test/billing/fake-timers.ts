import { quietLogger } from '../support/logger.js';

/** Billing logs nothing in tests (a warning about a re-cut is expected there). */
export const quietLog = quietLogger;

/** Where every billing test's ManualClock (the kit's one fake clock) starts: tests write store rows at this time. */
export const FAKE_EPOCH = Date.parse('2026-01-01T00:00:00.000Z');

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
