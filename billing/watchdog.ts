import type { MonitorTimers } from './timers.js';

/**
 * The enforcement watchdog (platform-api.md, reason code END.0503: "leg cut because the billing monitor was
 * unreachable"). A timer of its own checks the monitor's heartbeat, the time its last tick completed; when no tick
 * has completed for `stallMs`, nobody is watching the money, so every call the monitor guards is cut.
 *
 * Across processes (the legs held by one process, the monitor in another) the same check reads the heartbeat from
 * the store instead: the monitor writes `call_credit.heartbeat_at` for its live calls, and the process holding the
 * legs runs this watchdog with `heartbeat` = the oldest heartbeat_at of the calls it holds (one indexed query per
 * check), cutting with END.0503 when it is older than stallMs. See docs/billing.md.
 */
export interface EnforcementWatchdogOptions {
  timers: MonitorTimers;
  /** When the guarded monitor last proved it was alive (ms). */
  heartbeat: () => number;
  /** The calls to cut when it stalls. */
  guarded: () => string[];
  cut: (callId: string) => void;
  stallMs: number;
  checkMs: number;
}

export class EnforcementWatchdog {
  readonly #timer: unknown;
  #closed = false;

  constructor(private readonly o: EnforcementWatchdogOptions) {
    this.#timer = o.timers.setInterval(() => this.check(), o.checkMs, 'credit-watchdog');
  }

  /** Cuts every guarded call if the heartbeat is older than stallMs; returns how many were cut. */
  check(): number {
    if (this.#closed) return 0;
    if (this.o.timers.now() - this.o.heartbeat() <= this.o.stallMs) return 0;
    const ids = this.o.guarded();
    for (const id of ids) this.o.cut(id);
    return ids.length;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.o.timers.clearInterval(this.#timer);
  }
}
