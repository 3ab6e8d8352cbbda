import type { Clock } from './clock.js';

/**
 * Waits `ms` on `clock` (so a test's ManualClock moves it, not the wall clock), or less: it resolves at once when
 * `signal` aborts, or if it already has (a Pause of a call being hung up ends with the call). Never rejects.
 */
export function sleep(
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      resolve();
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
