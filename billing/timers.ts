/** Clock and interval timers, injected so tests drive time; `name` lets a test stall one timer. */
export interface MonitorTimers {
  now(): number;
  setInterval(fn: () => void, ms: number, name: string): unknown;
  clearInterval(handle: unknown): void;
}

export const systemTimers: MonitorTimers = {
  now: () => Date.now(),
  setInterval: (fn, ms) => {
    const h = setInterval(fn, ms);
    h.unref();
    return h;
  },
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};
