/**
 * Overload control for new calls (RFC 7339's spirit, Kamailio's load-based 503): when the box is offered more
 * calls than it carries, the excess is refused at once, before any store work, so that the calls already admitted
 * keep their latency. The signals are the event loop's delay and busy share and the store's and media engines'
 * backlogs; the limit is a rate (AIMD) cut on overload, held a second, raised while the box stays healthy and lifted
 * once nothing is refused. Beneath it, new calls are never admitted much faster than the box completes their set-ups
 * (the completion bound), so a flood onto a cold switch meets a limit before any signal shows. Only new calls are
 * refused: the callers never ask for in-dialog requests, registrations or Dial legs of admitted calls. Every rule and
 * constant, and why: docs/overload.md.
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
  /**
   * New calls a second admitted before any set-up has completed (a switch started cold, or idle for a second): the
   * completion bound's floor. 0 turns the bound off (the edges then need not report completions).
   */
  initialCps: number;
}

export const DEFAULT_OVERLOAD_SETTINGS: OverloadSettings = {
  maxLoopDelayMs: 40,
  maxStoreWaitMs: 100,
  platformMaxCps: 0,
  retryAfterSeconds: 2,
  minCps: 10,
  tickMs: 250,
  releaseAfterMs: 3000,
  initialCps: 50,
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
 * ...and, not limiting yet, faster than this many times that rate: the cost is learnt at the lower rates seen before,
 * where the loop's own upkeep weighs more, so it underestimates what the loop carries.
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
/**
 * The completion bound rises at most to this many times the rate of new calls (over the last second or the last
 * FLOOD_WINDOW_MS, the higher) or of completions: room to grow into, never a licence saved up while few calls came
 * (a TCP sender's window is not grown while it has little to send, RFC 7661).
 */
const BOUND_ROOM = 2;
/** The shortest span the completion rate is taken over, ms: the first completions after a start are no rate yet. */
const BOUND_MIN_SPAN_MS = 100;
/** The loop's busy share is judged since the last tick once this long has passed, else on the last tick's, ms. */
const BUSY_NOW_MIN_MS = 50;
/** A drop of the admitted rate deeper than this share empties the bucket's savings, as a cut does. */
const RATE_DROP = 0.95;
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
  /** The set-up of a new call this gate admitted has completed (its final answer went out). */
  noteCompleted?(): void;
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
  readonly #onGate: () => void;
  /** Set-ups of admitted calls completed within the last second (their times), for the completion bound. */
  readonly #completed: number[] = [];
  /** When calls began coming after a second without any: the completion rate's span starts there. */
  #activeSince = 0;
  /** The completion bound: new calls a second admitted at most (Infinity when off). */
  #bound: number;
  /** The rate the bucket was last set to, and the one last published to an outside gate. */
  #bucketRate = Infinity;
  #publishedRate: number | null = null;

  constructor(opts: {
    signals: () => LoadSignals;
    settings?: Partial<OverloadSettings>;
    clock?: OverloadClock;
    /** Called when shedding starts or stops, and each tick the limit changes while shedding. */
    onChange?: (state: OverloadState) => void;
    /** The rate an outside gate applies (gate()) moved with the completion bound, the state unchanged. */
    onGate?: () => void;
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
    this.#onGate = opts.onGate ?? (() => undefined);
    this.#bound = this.#settings.initialCps > 0 ? this.#settings.initialCps : Infinity;
    this.#publishedRate = this.#rateNow(this.#clock.now());
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
   * later than the loop-delay limit, new calls are limited at once, as on an overloaded tick. The full limit, not
   * less: a single stall of a few hundred ms is not a backlog that stands.
   */
  probe(): void {
    const now = this.#clock.now();
    const late = this.#probeDue === null ? 0 : now - this.#probeDue;
    this.#probeDue = now + PROBE_MS;
    this.#boundOnProbe(now);
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
    const bound = this.#bound;
    if (this.#limit !== null || bound !== Infinity) {
      if (!this.#configuredBucket().take(now))
        return this.#refuse(
          now,
          this.#limit !== null && this.#limit <= bound
            ? this.#reason
            : `new calls faster than their set-ups complete, ${Math.floor(bound)}/s`,
        );
    }
    this.#admit(now);
    return { ok: true };
  }

  noteAdmitted(): void {
    const now = this.#clock.now();
    this.#forget(now);
    if (this.#limit !== null || this.#bound !== Infinity) {
      const bucket = this.#configuredBucket();
      bucket.takeOwing(now, bucket.burst);
    }
    this.#admit(now);
  }

  /**
   * The set-up of a call this gate admitted has completed: its final response went out (a SIP call), or its
   * originate request was answered (REST). What the box completes is what it carries.
   */
  noteCompleted(): void {
    const now = this.#clock.now();
    this.#forget(now);
    this.#completed.push(now);
  }

  gate(): PublishedGate {
    const { platformMaxCps, retryAfterSeconds, minCps, maxLoopDelayMs } = this.#settings;
    const limitCps = this.#rateNow(this.#clock.now());
    return { limitCps, platformMaxCps, retryAfterSeconds, minCps, maxBacklogMs: 2 * maxLoopDelayMs };
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
    this.#boundOnTick(now, busy);
    this.#learnCost(now, s, busy);
    // Saturated is overload once new calls wait for the loop: the UDP front refused some for its backlog, or the
    // loop's delay is over its limit. Busy alone is not: a process started cold runs nearly full and still answers.
    // Or once new calls come in faster than the loop, full, carries at what a call cost it before: a flood's calls
    // wait downstream of the loop (the media engine, the store's threads, the webhook) before any backlog here shows.
    // With the completion bound on, a saturated loop is the bound's: it holds new calls at the rate they complete, where a
    // cut here would set the ceiling from what a process still cold carries, and hold the limit near it once warm.
    const saturated =
      this.#bound === Infinity &&
      this.#busyTicks >= 2 &&
      (refusedOutside || delayOver || this.#newCallRate(now) > this.#fullRate());
    // A query waits for a connection while the connections' results wait for this loop, too (on PostgreSQL every
    // connection can be checked out with the database idle). That much of the wait is the loop's, judged by its own
    // rule, not the store's.
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
        // Near full, the limit holds: raised there, it takes the loop to saturation and builds a backlog. Judged on
        // the busiest tick of the last second, not this one, so the quieter ticks of a loaded loop do not let it creep.
        const busiest = Math.max(...this.#busyRecent);
        const fast = this.#limit < NEAR_CEILING * this.#ceiling && busiest < BUSY_FAST;
        if (busiest < BUSY_RAISE) this.#limit = Math.ceil(this.#limit * (fast ? 1.1 : 1.02));
      }
    }
    if (before !== this.#limit) this.#onChange(this.state());
    this.#publishBound(now);
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
    // would take the limit, and the ceiling with it, down to minCps.
    if (this.#limit !== null && now < this.#holdUntil) return;
    const { minCps } = this.#settings;
    // Hardly any new calls in the last second: they are not what loads the box (a flood's calls settling, say), and
    // a limit set from that rate would take the ceiling down to minCps with it. The UDP front's backlog check still
    // guards the loop.
    if (this.#limit === null && this.#recent.length < 2 * minCps) return;
    const admittedRate = this.#newCallRate(now);
    // While limiting, only a limit that holds new calls back is cut: when they come in well under it (a flood over,
    // its last calls settling) the overload is the calls admitted before, not the few arriving now.
    if (this.#limit !== null && admittedRate < BINDING * this.#limit) return;
    const base = this.#limit === null ? admittedRate : Math.min(this.#limit, admittedRate);
    // A cut while limiting lowers the ceiling by a fifth at most: the rate admitted then is low because the limit is.
    // Except on a loop saturated at the limit: the box carries no more than that rate, whatever it was offered.
    this.#ceiling =
      saturated && this.#limit !== null
        ? Math.max(minCps, base)
        : Math.max(minCps, base, this.#limit === null ? 0 : 0.8 * this.#ceiling);
    // A flood's first cut: 70 % of what came in may still be far over what the box carries; what a call cost the
    // loop before the flood says where the box is full.
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
    // While limiting, a tick with nothing refused counts: the calls came in under the limit, at the rate offered, and
    // a switch started cold under load, limiting for its first seconds, still learns.
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
   * from what it carries, and steps of a tenth take seconds to get there).
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
   * flood's start) or at the limit (limiting, the hold over). The tick's rule needs two saturated ticks, and the
   * calls admitted meanwhile would wait for the loop.
   */
  #saturatedWithinTick(now: number): boolean {
    if (this.#bound !== Infinity) return false; // the completion bound's (see tick())
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
   * coming less than a second ago (a quarter second at least), so a switch overloaded in its first second is cut
   * from the rate it was offered, not from a second's worth of fewer calls.
   */
  #newCallRate(now: number): number {
    const first = this.#recent[0];
    if (first === undefined) return 0;
    // Over the span from the first, the calls after it (the intervals between them): 200/s for half a second is 200.
    return Math.round((1000 * (this.#recent.length - 1)) / Math.min(1000, Math.max(250, now - first)));
  }

  /**
   * The completion bound, moved each tick. On a saturated loop it is the rate set-ups complete (never below the
   * initial rate): the box takes on no more than it gets through, warm or cold. With room it rises, twice over a tick
   * while the loop was under BUSY_FAST busy all the last second and by a tenth while under BUSY_RAISE, as the limit
   * does; never beyond BOUND_ROOM times the rate new calls came in or completed, so a switch idle for a second
   * starts again from the initial rate (slow start after idle, as TCP's).
   */
  #boundOnTick(now: number, busy: number): void {
    if (this.#bound === Infinity) return;
    const { initialCps } = this.#settings;
    const completing = this.#completionRate(now);
    if (busy >= BUSY_SATURATED) {
      this.#bound = Math.max(initialCps, completing);
      return;
    }
    const busiest = Math.max(...this.#busyRecent);
    const step = busiest < BUSY_FAST ? 2 : busiest < BUSY_RAISE ? 1.1 : 1;
    const coming = Math.max(this.#newCallRate(now), this.#recentRate(now));
    const room = Math.max(initialCps, BOUND_ROOM * Math.max(coming, completing));
    this.#bound = Math.min(room, this.#bound * step);
  }

  /**
   * Between ticks, a loop saturated since the last one (long enough to tell) brings the bound down to the rate set-ups
   * complete at once: a flood's calls would otherwise wait out the rest of the tick's admissions.
   */
  #boundOnProbe(now: number): void {
    if (this.#bound === Infinity) return;
    if (this.#busySinceTick !== undefined && this.#tickAt !== null && now - this.#tickAt >= BUSY_NOW_MIN_MS) {
      const completing = Math.max(this.#settings.initialCps, this.#completionRate(now));
      if (this.#bound > completing && this.#busySinceTick() >= BUSY_SATURATED) this.#bound = completing;
    }
    this.#publishBound(now);
  }

  /** Set-ups completed a second over the last second, or over the time since calls began coming, when less. */
  #completionRate(now: number): number {
    this.#forget(now);
    const span = Math.min(1000, Math.max(BOUND_MIN_SPAN_MS, now - this.#activeSince));
    return (1000 * this.#completed.length) / span;
  }

  /** The rate new calls are admitted at now: the limit or the completion bound, the lower; null for none. */
  #rateNow(now: number): number | null {
    this.#forget(now);
    const rate = Math.min(this.#limit ?? Infinity, this.#bound);
    return rate === Infinity ? null : rate;
  }

  /**
   * Tells an outside gate when the rate it applies moved with the completion bound (by a twentieth or more), the
   * limit's own moves being told with the state.
   */
  #publishBound(now: number): void {
    const rate = this.#rateNow(now);
    const last = this.#publishedRate;
    if (rate === last) return;
    if (rate !== null && last !== null && Math.abs(rate - last) < (1 - RATE_DROP) * last) return;
    this.#publishedRate = rate;
    this.#onGate();
  }

  #admit(now: number): void {
    if (this.#recent.length === 0 && this.#completed.length === 0) this.#activeSince = now;
    this.#recent.push(now);
    this.#admitted++;
  }

  #refuse(now: number, reason: string): OverloadVerdict {
    this.#refused++;
    this.#lastRefusalAt = now;
    return { ok: false, retryAfterSeconds: this.#settings.retryAfterSeconds, reason };
  }

  #configuredBucket(): TokenBucket {
    const rate = Math.min(this.#limit ?? Infinity, this.#bound);
    const limit = rate === Infinity ? 0 : rate;
    // A rate just lowered well below the last: what was saved at the higher one is not spent at once.
    if (limit < RATE_DROP * this.#bucketRate) this.#bucket.keepAtMost(1);
    this.#bucketRate = limit;
    // A quarter of a second's worth, but never less than minCps: a few calls placed together at a low rate are
    // not refused for arriving together.
    this.#bucket.configure(limit, Math.max(this.#settings.minCps, limit / 4));
    return this.#bucket;
  }

  #forget(now: number): void {
    let drop = 0;
    while (drop < this.#recent.length && this.#recent[drop]! <= now - 1000) drop++;
    if (drop > 0) this.#recent.splice(0, drop);
    drop = 0;
    while (drop < this.#completed.length && this.#completed[drop]! <= now - 1000) drop++;
    if (drop > 0) this.#completed.splice(0, drop);
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
