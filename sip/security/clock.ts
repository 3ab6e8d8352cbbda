/**
 * Time as the gate sees it, injected so tests move a fake clock instead of sleeping (STYLE.md, point 4).
 * `every` runs periodic work (sweeps, polling the ban table); its handle must not keep the process alive.
 */
export interface SecurityClock {
  /** Milliseconds since the epoch. */
  now(): number;
  every(ms: number, fn: () => void): { cancel(): void };
}

export const systemClock: SecurityClock = {
  now: () => Date.now(),
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return { cancel: () => clearInterval(handle) };
  },
};
