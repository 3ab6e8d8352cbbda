import { performance } from 'node:perf_hooks';
import { systemClock, type Clock, type TimerHandle } from '../../kit/index.js';

/** Anything ticked every 20 ms (a ConferenceMixer). */
export interface Tickable {
  tick(): void;
  /** Packets one tick sends (participants), for the late-packet count. */
  readonly size: number;
}

export interface TickSchedulerOptions {
  periodMs?: number;
  /** A tick this much behind its due time sends late packets (a receiver's jitter buffer is about one frame). */
  lateMs?: number;
  /** Monotonic milliseconds (performance.now by default). */
  clock?: Pick<Clock, 'now'>;
  timers?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

export interface TickStats {
  ticks: number;
  packets: number;
  latePackets: number;
  /** Ticks skipped because the process fell more than MAX_CATCH_UP periods behind. */
  skippedTicks: number;
  /** How late ticks ran after their due time, in ms: 50th and 99th percentile, and the worst. */
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  /** Time spent mixing, ms per tick: mean and worst. */
  workMeanMs: number;
  workMaxMs: number;
}

const BUCKET_MS = 0.1;
const BUCKETS = 2000; // 0..200 ms by 0.1 ms, the last bucket holds anything later
/** A process stalled longer than this many periods does not send a burst of stale frames; it skips them. */
const MAX_CATCH_UP = 5;

/**
 * One timer for every mixer of the process, due every `periodMs` on a fixed grid from its start: tick n is due
 * at start + n * period, and each wait is computed from that grid, never as "period after the last tick", so
 * lateness of one tick does not shift the next (no drift). A tick that ran late still runs (its frame is sent
 * late and counted); a stall longer than MAX_CATCH_UP periods skips the stale ticks instead of bursting them.
 * Lag and work times are kept in fixed histograms, so measuring allocates nothing either.
 */
export class TickScheduler {
  readonly #period: number;
  readonly #late: number;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  readonly #members = new Set<Tickable>();
  #list: Tickable[] = [];
  #timer: TimerHandle | undefined;
  #start = 0;
  #n = 0;
  readonly #lag = new Uint32Array(BUCKETS);
  #lagMax = 0;
  #ticks = 0;
  #packets = 0;
  #latePackets = 0;
  #skipped = 0;
  #work = 0;
  #workMax = 0;

  constructor(opts: TickSchedulerOptions = {}) {
    this.#period = opts.periodMs ?? 20;
    this.#late = opts.lateMs ?? 20;
    this.#clock = opts.clock ?? { now: () => performance.now() };
    this.#timers = opts.timers ?? systemClock;
  }

  get running(): boolean {
    return this.#timer !== undefined;
  }

  /** Starts ticking with the first member; stops when the last leaves. */
  add(member: Tickable): void {
    this.#members.add(member);
    this.#list = [...this.#members];
    if (this.#timer === undefined) {
      this.#start = this.#clock.now();
      this.#n = 0;
      this.#schedule();
    }
  }

  remove(member: Tickable): void {
    this.#members.delete(member);
    this.#list = [...this.#members];
    if (this.#members.size === 0) this.stop();
  }

  stop(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  stats(): TickStats {
    return {
      ticks: this.#ticks,
      packets: this.#packets,
      latePackets: this.#latePackets,
      skippedTicks: this.#skipped,
      lagP50Ms: this.#percentile(0.5),
      lagP99Ms: this.#percentile(0.99),
      lagMaxMs: this.#lagMax,
      workMeanMs: this.#ticks ? this.#work / this.#ticks : 0,
      workMaxMs: this.#workMax,
    };
  }

  resetStats(): void {
    this.#lag.fill(0);
    this.#lagMax = 0;
    this.#ticks = 0;
    this.#packets = 0;
    this.#latePackets = 0;
    this.#skipped = 0;
    this.#work = 0;
    this.#workMax = 0;
  }

  #schedule(): void {
    const due = this.#start + this.#n * this.#period;
    this.#timer = this.#timers.setTimeout(() => this.#run(), Math.max(0, due - this.#clock.now()));
  }

  #run(): void {
    const now = this.#clock.now();
    const behind = Math.floor((now - this.#start) / this.#period) - this.#n;
    if (behind > MAX_CATCH_UP) {
      const skipped = behind - MAX_CATCH_UP;
      this.#skipped += skipped;
      this.#n += skipped;
      // A skipped frame is never sent: as bad as late for whoever waited for it.
      for (const m of this.#list) this.#latePackets += skipped * m.size;
    }
    // Every tick that is due by now runs, oldest first.
    while (this.#start + this.#n * this.#period <= this.#clock.now()) {
      this.#tickOnce(this.#start + this.#n * this.#period);
      this.#n += 1;
    }
    if (this.#members.size > 0) this.#schedule();
    else this.#timer = undefined;
  }

  #tickOnce(due: number): void {
    const began = this.#clock.now();
    const lag = began - due;
    this.#lag[Math.min(BUCKETS - 1, Math.max(0, Math.floor(lag / BUCKET_MS)))]! += 1;
    if (lag > this.#lagMax) this.#lagMax = lag;
    const list = this.#list;
    let packets = 0;
    for (let k = 0; k < list.length; k += 1) {
      const m = list[k]!;
      packets += m.size;
      m.tick();
    }
    const work = this.#clock.now() - began;
    this.#work += work;
    if (work > this.#workMax) this.#workMax = work;
    this.#ticks += 1;
    this.#packets += packets;
    // A packet is late when it leaves more than `lateMs` after its due time (the mixing itself counts).
    if (lag + work > this.#late) this.#latePackets += packets;
  }

  #percentile(q: number): number {
    const total = this.#ticks;
    if (total === 0) return 0;
    let seen = 0;
    for (let i = 0; i < BUCKETS; i += 1) {
      seen += this.#lag[i]!;
      if (seen >= q * total) return (i + 1) * BUCKET_MS;
    }
    return this.#lagMax;
  }
}
