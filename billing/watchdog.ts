import { callCreditHeartbeats, type Db } from '../store/index.js';
import { roomLogger, type Logger } from '../config/index.js';
import type { Clock, Periodic } from '../kit/index.js';

/**
 * The enforcement watchdog (platform-api.md, reason code END.0503: "leg cut because the billing monitor was
 * unreachable"). A timer of its own checks the monitor's heartbeat, the time its last tick completed; when no tick
 * has completed for `stallMs`, nobody is watching the money, so every call the monitor guards is cut.
 *
 * Across processes (the legs held by one process, the monitor in another) the heartbeat is read from the store
 * instead: see StoreHeartbeatWatchdog below and docs/billing.md.
 */
export interface EnforcementWatchdogOptions {
  clock: Pick<Clock, 'now' | 'every'>;
  /** When the guarded monitor last proved it was alive (ms). */
  heartbeat: () => number;
  /** The calls to cut when it stalls. */
  guarded: () => string[];
  cut: (callId: string) => void;
  stallMs: number;
  checkMs: number;
}

export class EnforcementWatchdog {
  readonly #timer: Periodic;
  #closed = false;

  constructor(private readonly o: EnforcementWatchdogOptions) {
    this.#timer = o.clock.every(o.checkMs, () => this.check(), 'credit-watchdog');
  }

  /** Cuts every guarded call if the heartbeat is older than stallMs; returns how many were cut. */
  check(): number {
    if (this.#closed) return 0;
    if (this.o.clock.now() - this.o.heartbeat() <= this.o.stallMs) return 0;
    const ids = this.o.guarded();
    for (const id of ids) this.o.cut(id);
    return ids.length;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer.cancel();
  }
}

export interface StoreHeartbeatWatchdogOptions {
  db: Db;
  clock: Pick<Clock, 'now' | 'every'>;
  /** The answered calls this process holds legs for. */
  held: () => string[];
  cut: (callId: string) => void;
  stallMs: number;
  checkMs: number;
  /** A held call with no credit row yet is given this long for its monitor to record it. */
  graceMs?: number;
  logger?: Logger;
}

/**
 * The watchdog for a process that holds legs while the credit monitor runs elsewhere: the monitor's heartbeat is
 * `call_credit.heartbeat_at` (written every `heartbeatPersistMs`, which must be well under `stallMs`). A held call
 * whose heartbeat is older than stallMs, or that no monitor has recorded after the grace, is cut (END.0503 by the
 * caller). A store this process cannot read for longer than stallMs counts as a stalled monitor (fail closed).
 */
export class StoreHeartbeatWatchdog {
  readonly #timer: Periodic;
  readonly #firstSeen = new Map<string, number>();
  readonly #cut = new Set<string>();
  readonly #log: Logger;
  #lastGoodRead: number;
  #checking: Promise<string[]> | undefined;
  #closed = false;

  constructor(private readonly o: StoreHeartbeatWatchdogOptions) {
    this.#log = o.logger ?? roomLogger('billing');
    this.#lastGoodRead = o.clock.now();
    this.#timer = o.clock.every(o.checkMs, () => void this.check(), 'credit-store-watchdog');
  }

  /** One check; returns the calls it cut. Overlapping checks share one. */
  check(): Promise<string[]> {
    this.#checking ??= this.#check().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer.cancel();
  }

  async #check(): Promise<string[]> {
    if (this.#closed) return [];
    const ids = this.o.held().filter((id) => !this.#cut.has(id));
    const now = this.o.clock.now();
    for (const id of ids) if (!this.#firstSeen.has(id)) this.#firstSeen.set(id, now);
    for (const id of this.#firstSeen.keys()) if (!ids.includes(id)) this.#firstSeen.delete(id);
    if (!ids.length) return [];
    let beats: Map<string, number> | undefined;
    try {
      const rows = await callCreditHeartbeats(this.o.db, ids);
      beats = new Map(rows.map((r) => [r.call_id, Date.parse(r.heartbeat_at)]));
      this.#lastGoodRead = now;
    } catch (e) {
      this.#log.error({ err: e }, 'watchdog cannot read heartbeats');
    }
    const stale = ids.filter((id) => {
      if (!beats) return now - this.#lastGoodRead > this.o.stallMs;
      const beat = beats.get(id);
      if (beat === undefined) return now - this.#firstSeen.get(id)! > (this.o.graceMs ?? this.o.stallMs);
      return now - beat > this.o.stallMs;
    });
    for (const id of stale) {
      this.#cut.add(id);
      try {
        this.o.cut(id);
      } catch (e) {
        this.#log.error({ err: e, callId: id }, 'cut callback threw');
      }
    }
    return stale;
  }
}
