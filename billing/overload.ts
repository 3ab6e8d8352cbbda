/**
 * Overload control for new calls (RFC 7339's spirit, Kamailio's load-based 503): when the box is offered more
 * calls than it can carry, the excess is refused at once, before any store work, so that the calls already
 * admitted keep their latency. Without it every call waits in the store's queue and all of them time out.
 *
 * Signals, read every tick: the event loop's delay (p99 over the tick) and the store's queue (the longest wait for
 * a connection). The store's above its limit means overloaded; the loop's delay must be above its limit on two
 * ticks running: one long turn (a full GC, a slow commit, even of 200 ms) is not overload, and shedding on it refused
 * calls a box with room to spare could carry (a 200/s run shed 14 % for 10 s after one). While already limiting, one
 * tick over is enough. The controller is rate-based (AIMD): on overload it sets a limit of 70 % of the rate it
 * admitted over the last second (never below `minCps`; while limiting, only a limit the new calls come in at is
 * cut), holds it for a second so the backlog drains, then raises it while the signals
 * stay healthy: by 10 % a tick up to 90 % of the rate at which overload was last seen (the ceiling), by 2 % a tick
 * beyond it, so that the limit does not overshoot the box's capacity by a tick's worth of calls and build a backlog
 * again each time it probes; and only while the loop was busy under 85 % of every tick of the last second (raised on a
 * full loop it climbed past what the box carries and its backlog followed), by 10 % only while under 75 %. A loop
 * saturated (busy 97 % or more) on two ticks running, with new calls waiting for it or coming in faster than it
 * carries at what a call cost it while healthy, is overload too; a flood's first cut is then no higher than the rate
 * at which that cost keeps the loop 85 % busy. While the limit is held it is not cut again. Once nothing has been
 * refused for `releaseAfterMs` the limit is lifted. New calls pass a token bucket at the limit's rate. An
 * operator may also set a fixed platform-wide calls-per-second cap (`platformMaxCps`, 0 = none).
 *
 * Between ticks a probe every 10 ms measures how late its own timer fires (the event loop's backlog as a message
 * arriving now would wait it out). A backlog that stands, every probe late by over the loop-delay limit for a whole
 * tick, is overload at once, limited as on an overloaded tick (CoDel's idea: a queue that never drains within
 * an interval, not one long turn, which the next probe finds drained). A flood of twice the box's capacity builds
 * that backlog within a few hundred milliseconds; the tick's rule needed two ticks of p99 over the limit, while every
 * call admitted meanwhile waited (the carrier bench at 400/s: 600 calls admitted in the first three seconds at p99
 * 0.5-1.5 s, then p99 16 ms).
 *
 * The probe also looks at the tick in progress for a flood's start: a loop saturated since the last tick with new calls
 * coming in, over the last quarter second, faster than it carries at the learnt cost, is limited then and there, not
 * two ticks later.
 *
 * Only new calls are ever refused here: the callers (SIP edge, REST originate) never ask for in-dialog requests,
 * registrations or Dial legs of admitted calls.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { StoreQueueProbe } from '../store/index.js';
import { TokenBucket, type Clock } from '../kit/index.js';

export interface LoadSignals {
  /** Event-loop delay p99 over the last tick, ms. */
  loopDelayMs: number;
  /**
   * The backlog in front of the store: the longest wait for a connection, or for an account's admission turn,
   * since the last tick, or the oldest still waiting, ms.
   */
  storeWaitMs: number;
  /** The backlog in front of the media engines: the longest an ng command waited to be sent, ms. */
  mediaWaitMs?: number;
  /** The event loop's busy share over the tick (event-loop utilisation, 0-1); absent when not measured. */
  loopBusy?: number;
}

export interface OverloadSettings {
  maxLoopDelayMs: number;
  maxStoreWaitMs: number;
  /** Fixed platform-wide cap on new calls per second; 0 for none. */
  platformMaxCps: number;
  /** Seconds a refused sender is told to wait (Retry-After). Short: carriers take it as "this server is down". */
  retryAfterSeconds: number;
  minCps: number;
  tickMs: number;
  releaseAfterMs: number;
}

export const DEFAULT_OVERLOAD_SETTINGS: OverloadSettings = {
  maxLoopDelayMs: 40,
  maxStoreWaitMs: 100,
  platformMaxCps: 0,
  retryAfterSeconds: 2,
  minCps: 10,
  tickMs: 250,
  releaseAfterMs: 3000,
};

/** Loop-delay ticks over the limit in a row that mean overload (when not limiting already). */
const DELAY_TICKS = 2;
/** Below this share of the ceiling the limit rises fast (10 % a tick), above it slowly (2 %). */
const NEAR_CEILING = 0.9;
/** The limit after a cut, as a share of the rate admitted over the last second. */
const CUT = 0.7;
/** While limiting, the limit is cut only when at least this share of it was admitted over the last second. */
const BINDING = 0.8;
/** The standing-backlog probe's period, ms. */
const PROBE_MS = 10;
/**
 * A flood seen by the probe: since the last tick (at least this long, ms) the loop was saturated and new calls came in,
 * over the last FLOOD_WINDOW_MS, faster than it carries at what a call cost it while healthy.
 */
const FLOOD_MIN_MS = 200;
const FLOOD_WINDOW_MS = 250;
/**
 * ...and, not limiting yet, faster than this many times that rate: the cost is learnt at the rates seen before, where
 * the loop's own upkeep weighs more (learnt at 150/s, it said full at about 300/s on a box that carried 480), and a
 * step to 400/s on it, saturated for a moment while it warmed up, was cut to 280/s (13 % refused).
 */
const FLOOD_OVER = 1.5;
/** While limiting, the limit rises only while the loop was busy less than this share of every tick of the last second. */
const BUSY_RAISE = 0.85;
/** ...and by 10 % a tick only while under this share too (by 2 % between it and BUSY_RAISE). */
const BUSY_FAST = 0.75;
/** Ticks of the loop's busy share the raise looks back on: a second's worth of the default 250-ms tick. */
const BUSY_WINDOW = 4;
/** Busy at least this share on two ticks running is overload, even with the loop's delay within its limit. */
const BUSY_SATURATED = 0.97;
/** The limit after a cut on a saturated loop while limiting: the limit is a little too high, a small step back. */
const CUT_SATURATED = 0.9;
/** The loop's busy share the first cut aims at, from what a call cost the loop before the overload. */
const TARGET_BUSY = 0.85;
/** The weight of each healthy tick in the running cost of a call (about 2.5 s of ticks). */
const COST_WEIGHT = 0.1;
/** Healthy ticks before that cost is trusted. */
const COST_TICKS = 12;
/**
 * The cost is learnt only from ticks with the loop at least this busy: at a few calls a second the loop's own
 * upkeep (timers, GC, the registrar) is most of its busy share, and a call would look several times as costly.
 */
const COST_MIN_BUSY = 0.3;
/** ...and under this share: a loop nearly full delays its own work, and the cost it shows is not a call's alone. */
const COST_MAX_BUSY = 0.9;

export interface OverloadState {
  shedding: boolean;
  /** Calls per second admitted while limiting; null when unlimited (or only the fixed cap applies). */
  limitCps: number | null;
  /** Why the limit was set: which signal, with its value. */
  reason: string;
  /** New calls refused since the controller started. */
  refused: number;
  admitted: number;
}

export type OverloadVerdict = { ok: true } | { ok: false; retryAfterSeconds: number; reason: string };

/** What the edges (SIP, REST) ask before taking a new call. */
export interface NewCallGate {
  admitNewCall(): OverloadVerdict;
  /** A new call a gate outside the main thread admitted (the SIP UDP front): counted, and it takes a token. */
  noteAdmitted?(): void;
  /** The gate as an outside gate (the SIP UDP front) applies it: the current limit and the fixed settings. */
  gate?(): PublishedGate;
}

/** The gate as published to the SIP UDP front (sip/stack/transport/udp-front.ts). */
export interface PublishedGate {
  limitCps: number | null;
  platformMaxCps: number;
  retryAfterSeconds: number;
  minCps: number;
  /**
   * A new call is refused while what the outside gate handed the main thread this long ago is still unread: the
   * loop is that far behind, and a call let in now would wait it out. Twice the loop-delay limit.
   */
  maxBacklogMs: number;
}

/** The slice of the kit's one clock overload control reads; monotonic by default (performance.now). */
export type OverloadClock = Pick<Clock, 'now'>;

export class OverloadControl implements NewCallGate {
  readonly #settings: OverloadSettings;
  readonly #signals: () => LoadSignals;
  readonly #clock: OverloadClock;
  readonly #onChange: (state: OverloadState) => void;
  #limit: number | null = null;
  #reason = '';
  /** New calls pass it while limiting: at the limit's rate, a quarter second's worth (at least minCps) at once. */
  readonly #bucket = new TokenBucket({ ratePerSecond: 0, burst: 0, tokens: 0, at: 0 });
  #holdUntil = 0;
  /** Ticks in a row with the loop's delay over its limit. */
  #delayTicks = 0;
  /** Ticks in a row with the loop saturated (busy BUSY_SATURATED or more). */
  #busyTicks = 0;
  /** The loop's busy share on the last BUSY_WINDOW ticks, oldest first. */
  readonly #busyRecent: number[] = [];
  /** Running averages over healthy ticks of the loop's busy share and of new calls a second: what a call costs. */
  #costBusy = 0;
  #costRate = 0;
  #costTicks = 0;
  /** When the last tick ran, and the admissions counted by then: the new-call rate over the same span as busy. */
  #tickAt: number | null = null;
  #admittedAtTick = 0;
  /** The rate admitted when overload was last seen; the limit rises slowly near it. */
  #ceiling = Infinity;
  #lastRefusalAt = -Infinity;
  #refused = 0;
  #admitted = 0;
  /** Admission times within the last second (for the fixed cap and the admitted rate). */
  readonly #recent: number[] = [];
  #timer: NodeJS.Timeout | undefined;
  #probeTimer: NodeJS.Timeout | undefined;
  /** When the probe is next due, and since when every probe has been late (null: the last one was on time). */
  #probeDue: number | null = null;
  #lateSince: number | null = null;
  readonly #outsideRefusals: () => number;
  #outsideSeen = 0;
  readonly #busySinceTick: (() => number) | undefined;

  constructor(opts: {
    signals: () => LoadSignals;
    settings?: Partial<OverloadSettings>;
    clock?: OverloadClock;
    /** Called when shedding starts or stops, and each tick the limit changes while shedding. */
    onChange?: (state: OverloadState) => void;
    /** New calls refused by a gate outside the main thread (the SIP UDP front), a running count; read each tick. */
    outsideRefusals?: () => number;
    /** The loop's busy share since the signals were last read (the probe's look at the tick in progress). */
    busySinceTick?: () => number;
  }) {
    this.#settings = { ...DEFAULT_OVERLOAD_SETTINGS, ...opts.settings };
    this.#signals = opts.signals;
    this.#clock = opts.clock ?? { now: () => performance.now() };
    this.#onChange = opts.onChange ?? (() => undefined);
    this.#outsideRefusals = opts.outsideRefusals ?? (() => 0);
    this.#busySinceTick = opts.busySinceTick;
  }

  /** Starts the periodic tick (the switch); tests call tick() themselves. */
  start(): this {
    this.#timer = setInterval(() => this.tick(), this.#settings.tickMs);
    this.#timer.unref();
    this.#probeTimer = setInterval(() => this.probe(), PROBE_MS);
    this.#probeTimer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.#timer);
    clearInterval(this.#probeTimer);
  }

  /**
   * The standing-backlog probe (every PROBE_MS; tests call it themselves): when every probe for a whole tick came
   * later than the loop-delay limit, new calls are limited at once, as on an overloaded tick. (Half the limit shed
   * 1.4 % of a 200/s run, which the box carries, on one stall of a few hundred ms.)
   */
  probe(): void {
    const now = this.#clock.now();
    const late = this.#probeDue === null ? 0 : now - this.#probeDue;
    this.#probeDue = now + PROBE_MS;
    if (this.#saturatedWithinTick(now)) {
      this.#forget(now);
      const before = this.#limit;
      // Not limiting: a flood's start. Limiting: the step back the tick would take a tick or two later.
      const reason =
        before === null
          ? `new calls at ${this.#recentRate(now)}/s on a saturated loop`
          : 'event loop saturated at the limit';
      this.#overloaded(now, reason, this.#saturatedCut(), true);
      if (before !== this.#limit) this.#onChange(this.state());
      return;
    }
    const target = this.#settings.maxLoopDelayMs;
    if (late <= target) {
      this.#lateSince = null;
      return;
    }
    // Counted from the first late probe's firing, not from when it was due: one long turn alone never spans a tick.
    this.#lateSince ??= now;
    if (this.#limit === null && now - this.#lateSince >= this.#settings.tickMs) {
      const before = this.#limit;
      this.#forget(now);
      // As an overloaded tick would, only sooner: 70 % of the last second's admissions. (The new calls the loop got
      // through while behind are no measure of what it carries: it was busy with the calls already admitted.)
      this.#overloaded(
        now,
        `event loop behind by over ${Math.round(target)} ms for ${Math.round(now - this.#lateSince)} ms`,
        CUT,
      );
      if (before !== this.#limit) this.#onChange(this.state());
    }
  }

  /** May a new call be taken now? Synchronous and O(1) amortised, so a refusal costs nothing of the store. */
  admitNewCall(): OverloadVerdict {
    const now = this.#clock.now();
    this.#forget(now);
    const cap = this.#settings.platformMaxCps;
    if (cap > 0 && this.#recent.length >= cap) return this.#refuse(now, `platform cap of ${cap} calls/s`);
    if (this.#limit !== null) {
      if (!this.#configuredBucket().take(now)) return this.#refuse(now, this.#reason);
    }
    this.#recent.push(now);
    this.#admitted++;
    return { ok: true };
  }

  noteAdmitted(): void {
    const now = this.#clock.now();
    this.#forget(now);
    if (this.#limit !== null) {
      const bucket = this.#configuredBucket();
      bucket.takeOwing(now, bucket.burst);
    }
    this.#recent.push(now);
    this.#admitted++;
  }

  gate(): PublishedGate {
    const { platformMaxCps, retryAfterSeconds, minCps, maxLoopDelayMs } = this.#settings;
    return { limitCps: this.#limit, platformMaxCps, retryAfterSeconds, minCps, maxBacklogMs: 2 * maxLoopDelayMs };
  }

  /** Reads the signals and moves the limit (every `tickMs`). */
  tick(): void {
    const now = this.#clock.now();
    this.#forget(now);
    // Refusals made outside the main thread keep the limit from being lifted, as this gate's own do.
    const outside = this.#outsideRefusals();
    const refusedOutside = outside > this.#outsideSeen;
    if (refusedOutside) {
      this.#refused += outside - this.#outsideSeen;
      this.#lastRefusalAt = now;
    }
    this.#outsideSeen = outside;
    const s = this.#signals();
    const { maxLoopDelayMs, maxStoreWaitMs, releaseAfterMs } = this.#settings;
    const before = this.#limit;
    const delayOver = s.loopDelayMs > maxLoopDelayMs;
    this.#delayTicks = delayOver ? this.#delayTicks + 1 : 0;
    const busy = s.loopBusy ?? 0;
    this.#busyTicks = busy >= BUSY_SATURATED ? this.#busyTicks + 1 : 0;
    this.#busyRecent.push(busy);
    if (this.#busyRecent.length > BUSY_WINDOW) this.#busyRecent.shift();
    this.#learnCost(now, s, busy);
    // Saturated is overload once new calls wait for the loop: the UDP front refused some for its backlog, or the
    // loop's delay is over its limit. A cold process at 200/s runs 98 % busy for its first seconds and answers in
    // 20 ms (p99 92); cutting on busy alone refused 1.3 % of that run.
    // Or once new calls come in faster than the loop, full, carries at what a call cost it before: a flood's calls
    // wait downstream of the loop (the media engine, the store's threads, the webhook) before any backlog here shows.
    const saturated =
      this.#busyTicks >= 2 && (refusedOutside || delayOver || this.#newCallRate(now) > this.#fullRate());
    // A query waits for a connection while the connections' results wait for this loop, too: on PostgreSQL under a
    // lagging loop every connection was checked out and queries waited 93-116 ms while the database's backends sat
    // idle. That much of the wait is the loop's (its own signal, with its own rule), not the store's.
    const waitLimit = maxStoreWaitMs + 2 * s.loopDelayMs;
    const storeOver = s.storeWaitMs > waitLimit;
    // rtpengine behind (its commands wait for a slot, NgClient maxInFlight): calls admitted now would wait there.
    const mediaOver = (s.mediaWaitMs ?? 0) > waitLimit;
    const lagging = delayOver && (this.#limit !== null || this.#delayTicks >= DELAY_TICKS);
    if (storeOver || mediaOver || lagging) {
      this.#overloaded(
        now,
        storeOver
          ? `store backlog ${Math.round(s.storeWaitMs)} ms`
          : mediaOver
            ? `media engine backlog ${Math.round(s.mediaWaitMs ?? 0)} ms`
            : `event-loop delay ${Math.round(s.loopDelayMs)} ms`,
        CUT,
      );
    } else if (saturated) {
      // Limiting, the admitted rate is the limit, a little over what the loop carries: a small step back. Not yet
      // limiting, it is whatever is offered (a flood's start): the full cut, or it took three holds to get there.
      this.#overloaded(now, `event loop busy ${Math.round(100 * busy)} %`, this.#saturatedCut(), true);
    } else if (this.#limit !== null && now >= this.#holdUntil) {
      if (now - this.#lastRefusalAt >= releaseAfterMs) {
        this.#limit = null;
        this.#ceiling = Infinity;
      } else {
        // Near full, the limit holds: raised there, it took the loop to saturation and its backlog (the carrier
        // bench at 400/s: the limit rose to 420/s with the loop busy 100 % of every second, p99 1 s). Judged on the
        // busiest tick of the last second, not this one: at 900/s offered to a box carrying about 480, ticks of
        // 85-96 % let the limit creep up on the quieter ones until the loop saturated every few seconds (p99 232 ms);
        // and at 85 %, not 90: 2 % a tick while under 90 % still took it into saturation every 5-10 s (p99 290 ms).
        const busiest = Math.max(...this.#busyRecent);
        const fast = this.#limit < NEAR_CEILING * this.#ceiling && busiest < BUSY_FAST;
        if (busiest < BUSY_RAISE) this.#limit = Math.ceil(this.#limit * (fast ? 1.1 : 1.02));
      }
    }
    if (before !== this.#limit) this.#onChange(this.state());
  }

  state(): OverloadState {
    return {
      shedding: this.#limit !== null,
      limitCps: this.#limit,
      reason: this.#limit === null ? '' : this.#reason,
      refused: this.#refused,
      admitted: this.#admitted,
    };
  }

  /**
   * Limits new calls to `cut` of the rate admitted over the last second (or of the limit, if lower), and a flood's
   * first cut to no more than the learnt cost allows; held a second. That rate is the ceiling the limit then rises
   * slowly near.
   */
  #overloaded(now: number, reason: string, cut: number, saturated = false): void {
    // One cut per hold: the signals still show the backlog the last cut is draining, and cutting on each tick of it
    // took the limit to minCps within two seconds of a flood's start, and the ceiling with it, so that after the
    // flood the limit climbed back by 2 % a tick (150/s offered after 400/s: about half refused for 30 s).
    if (this.#limit !== null && now < this.#holdUntil) return;
    const { minCps } = this.#settings;
    // Hardly any new calls in the last second: they are not what loads the box (a flood's calls settling, say), and
    // a limit set from that rate took the ceiling down to minCps with it: the carrier bench's 150/s right after a
    // 400/s flood started at 19/s and took 20 s to climb back. The UDP front's backlog check still guards the loop.
    if (this.#limit === null && this.#recent.length < 2 * minCps) return;
    const admittedRate = this.#newCallRate(now);
    // While limiting, only a limit that holds new calls back is cut: when they come in well under it (a flood over,
    // its last calls settling) the overload is the calls admitted before, and a cut to the rate of the few arriving
    // now took the limit to minCps (the carrier bench's 150/s after a 400/s flood: 19/s, 7 s to climb back).
    if (this.#limit !== null && admittedRate < BINDING * this.#limit) return;
    const base = this.#limit === null ? admittedRate : Math.min(this.#limit, admittedRate);
    // A cut while limiting lowers the ceiling by a fifth at most: the rate admitted then is low because the limit is.
    // Except on a loop saturated at the limit: the box carries no more than that rate, whatever it was offered (a
    // flood's first second sets a ceiling of what came in, 820/s against the 480 carried, and the limit climbed at
    // 10 % a tick to 90 % of it, into saturation).
    this.#ceiling =
      saturated && this.#limit !== null
        ? Math.max(minCps, base)
        : Math.max(minCps, base, this.#limit === null ? 0 : 0.8 * this.#ceiling);
    // A flood's first cut: 70 % of what came in may still be far over what the box carries (at 400/s offered to a box
    // carrying 180, three cuts a second apart, 270, 242, 165, and calls at 0.3 s meanwhile); what a call cost the loop
    // before it says where the box is full.
    const model = this.#limit === null ? this.#modelRate() : Infinity;
    this.#limit = Math.max(minCps, Math.floor(Math.min(base * cut, model)));
    this.#reason = reason;
    this.#holdUntil = now + 1000;
    this.#configuredBucket().refill(now);
    this.#bucket.keepAtMost(1);
  }

  /**
   * What a call costs the loop, learnt while the box is healthy and refusing nothing: its busy share over the rate of
   * new calls (a call's later work, its hang-up and billing, is in the share too once the rate has been steady).
   */
  #learnCost(now: number, s: LoadSignals, busy: number): void {
    const since = this.#tickAt;
    const admitted = this.#admitted - this.#admittedAtTick;
    this.#tickAt = now;
    this.#admittedAtTick = this.#admitted;
    if (since === null || now - since < this.#settings.tickMs / 2) return;
    const rate = (1000 * admitted) / (now - since);
    const healthy = busy >= COST_MIN_BUSY && busy < COST_MAX_BUSY && s.loopDelayMs <= this.#settings.maxLoopDelayMs;
    // While limiting, a tick with nothing refused counts: the calls came in under the limit, at the rate offered. (A
    // switch started cold under load limits at first, for seconds; a flood right after found nothing learnt.)
    if (!healthy || rate < 2 * this.#settings.minCps || this.#lastRefusalAt >= since) return;
    const w = this.#costTicks === 0 ? 1 : COST_WEIGHT;
    this.#costBusy += w * (busy - this.#costBusy);
    this.#costRate += w * (rate - this.#costRate);
    this.#costTicks++;
  }

  /**
   * The cut on a saturated loop: the full one at a flood's start (not limiting yet: the rate is whatever is offered;
   * the first cut is capped by the learnt cost anyway); while limiting, a tenth once the cost of a call is known (the
   * limit is a little over what the loop carries), the full cut before (a process started cold into a flood is far
   * from it: at 900/s, cut to 600 and then by a tenth a second, its calls waited 0.5-0.8 s for six seconds).
   */
  #saturatedCut(): number {
    return this.#limit === null || this.#fullRate() === Infinity ? CUT : CUT_SATURATED;
  }

  /** The rate at which the loop would be TARGET_BUSY busy, from the cost learnt; Infinity before it is known. */
  #modelRate(): number {
    return TARGET_BUSY * this.#fullRate();
  }

  /** The rate at which the loop would be busy all the time, from the cost learnt; Infinity before it is known. */
  #fullRate(): number {
    if (this.#costTicks < COST_TICKS || this.#costBusy <= 0) return Infinity;
    return this.#costRate / this.#costBusy;
  }

  /**
   * Overload seen between ticks: the loop saturated since the last tick (for FLOOD_MIN_MS at least) with new calls
   * coming in, over the last FLOOD_WINDOW_MS, faster than the loop carries at the cost learnt (not limiting: a
   * flood's start) or at the limit (limiting, the hold over). The tick's rule needs two saturated ticks; at 900/s
   * offered to a box carrying about 480, the 450-800 calls admitted meanwhile waited 0.3-0.6 s for the loop (the
   * carrier bench's first two seconds, p99 450-650 ms), and each saturation mid-flood held calls 0.1-0.4 s.
   */
  #saturatedWithinTick(now: number): boolean {
    if (this.#busySinceTick === undefined || this.#tickAt === null || now - this.#tickAt < FLOOD_MIN_MS) return false;
    if (this.#limit !== null) {
      if (now < this.#holdUntil || this.#recentRate(now) < BINDING * this.#limit) return false;
    } else {
      const full = this.#fullRate();
      if (full === Infinity || this.#recentRate(now) <= FLOOD_OVER * full) return false;
    }
    return this.#busySinceTick() >= BUSY_SATURATED;
  }

  /** New calls a second admitted over the last FLOOD_WINDOW_MS. */
  #recentRate(now: number): number {
    let n = 0;
    for (let i = this.#recent.length - 1; i >= 0 && this.#recent[i]! > now - FLOOD_WINDOW_MS; i--) n++;
    return Math.round((1000 * n) / FLOOD_WINDOW_MS);
  }

  /**
   * New calls a second admitted over the last second, or over the time since the first of them when calls began
   * coming less than a second ago (a quarter second at least): a switch started cold at 200/s overloaded half a second
   * in, and the limit and its ceiling set from the 99 calls of that half second took 12 s to climb to 200/s.
   */
  #newCallRate(now: number): number {
    const first = this.#recent[0];
    if (first === undefined) return 0;
    // Over the span from the first, the calls after it (the intervals between them): 200/s for half a second is 200.
    return Math.round((1000 * (this.#recent.length - 1)) / Math.min(1000, Math.max(250, now - first)));
  }

  #refuse(now: number, reason: string): OverloadVerdict {
    this.#refused++;
    this.#lastRefusalAt = now;
    return { ok: false, retryAfterSeconds: this.#settings.retryAfterSeconds, reason };
  }

  #configuredBucket(): TokenBucket {
    const limit = this.#limit ?? 0;
    // A quarter of a second's worth, but never less than minCps: a few calls placed together at a low rate are
    // not refused for arriving together.
    this.#bucket.configure(limit, Math.max(this.#settings.minCps, limit / 4));
    return this.#bucket;
  }

  #forget(now: number): void {
    let drop = 0;
    while (drop < this.#recent.length && this.#recent[drop]! <= now - 1000) drop++;
    if (drop > 0) this.#recent.splice(0, drop);
  }
}

/**
 * The signals of this process: its event-loop delay (a 10 ms resolution histogram, reset at each read) and the
 * store's connection queue. `close()` stops both.
 */
export function loadSignalsOf(
  probe: StoreQueueProbe,
  /** Further queues in front of the store (the per-account admission turn), as a wait in ms since the last read. */
  queueWaitMs: () => number = () => 0,
  /** How long media-engine commands waited to be sent since the last read, ms (MediaEngines.sampleSendWait). */
  mediaWaitMs: () => number = () => 0,
): { read: () => LoadSignals; busySinceRead: () => number; close: () => void } {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let busySince = performance.eventLoopUtilization();
  return {
    read() {
      const loopDelayMs = loop.count > 0 ? loop.percentile(99) / 1e6 : 0;
      loop.reset();
      const busyNow = performance.eventLoopUtilization();
      const loopBusy = performance.eventLoopUtilization(busyNow, busySince).utilization;
      busySince = busyNow;
      const q = probe.sample();
      return {
        loopDelayMs,
        storeWaitMs: Math.max(q.maxWaitMs, q.oldestWaitMs, queueWaitMs()),
        mediaWaitMs: mediaWaitMs(),
        loopBusy,
      };
    },
    busySinceRead() {
      return performance.eventLoopUtilization(performance.eventLoopUtilization(), busySince).utilization;
    },
    close() {
      loop.disable();
      probe.close();
    },
  };
}
