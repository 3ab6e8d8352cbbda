/**
 * Time as a live call sees it: the instants it stamps on the CDR (answer, end, a recording's expiry) and the
 * waits of Pause. The switch uses systemClock; unit tests move a manual clock instead of sleeping.
 */
export interface CallClock {
  now(): Date;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const systemClock: CallClock = {
  now: () => new Date(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    }),
};
