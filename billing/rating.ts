import type { Db } from '../store/index.js';
import { listRates, type RateRow } from '../store/index.js';
import { systemClock, type Clock } from '../kit/index.js';

/**
 * Rating: turns operator rates (the `rates` table) into cents for a call. See docs/billing.md.
 *
 * - outbound: cents per minute, chosen by the longest prefix of the dialled digits (prefix '' is the catch-all);
 * - inbound, internal: cents per minute, one rate each (internal is free unless the operator sets one);
 * - tts: cents per second of synthesised speech, by tier ('' is the default espeak-ng tier);
 * - did_setup: a one-off fee per acquired number.
 */
export type CallDirection = 'outbound' | 'inbound' | 'internal';

export interface BillingIncrement {
  /** The first block of a connected call: any answered call pays at least this many seconds. */
  initialSeconds: number;
  /** After the first block, time is billed in steps of this many seconds. */
  incrementSeconds: number;
}

export const DEFAULT_INCREMENT: BillingIncrement = { initialSeconds: 60, incrementSeconds: 1 };

export class RateNotFoundError extends Error {
  readonly code = 'RATE_NOT_FOUND';
  constructor(readonly destination: string) {
    super(`no outbound rate covers ${JSON.stringify(destination)}`);
    this.name = 'RateNotFoundError';
  }
}

/** The digits of a destination: '+254 700-1' and 'sip:+2547001@host' both give '2547001'. */
export function destinationDigits(to: string): string {
  const user = /^(?:sips?|tel):([^@;]*)/i.exec(to.trim())?.[1] ?? to;
  return user.replace(/\D/g, '');
}

/** Whole seconds from `fromMs` to `toMs`, a started second counted whole; 0 when `toMs` is not after `fromMs`. */
export function secondsUp(fromMs: number, toMs: number): number {
  return Math.ceil(Math.max(0, toMs - fromMs) / 1000);
}

/**
 * A call record's two lengths from its instants, each rounded up to a whole second (docs/api.md, "Calls"):
 * `durationSeconds` from the start to the end, `talkSeconds` from the answer (never taken before the start) to the
 * end, 0 when it was never answered. Both round the same way from a later-or-equal start, so talk time never
 * exceeds the duration; billing rates exactly this `talkSeconds` (`secondsUp` from the answer).
 */
export function cdrSeconds(i: { startedMs: number; answeredMs: number | null; endedMs: number }): {
  durationSeconds: number;
  talkSeconds: number;
} {
  return {
    durationSeconds: secondsUp(i.startedMs, i.endedMs),
    talkSeconds: i.answeredMs === null ? 0 : secondsUp(Math.max(i.startedMs, i.answeredMs), i.endedMs),
  };
}

/** Seconds to bill for `talkSeconds` of connected time: the first block whole, then whole increments. */
export function billableSeconds(talkSeconds: number, inc: BillingIncrement): number {
  if (talkSeconds <= 0) return 0;
  if (talkSeconds <= inc.initialSeconds) return inc.initialSeconds;
  const over = talkSeconds - inc.initialSeconds;
  return inc.initialSeconds + Math.ceil(over / inc.incrementSeconds) * inc.incrementSeconds;
}

/** Cents for connected time at a per-minute rate; fractions of a cent are rounded up (integers only). */
export function talkCents(perMinuteCents: number, talkSeconds: number, inc: BillingIncrement): number {
  return Math.ceil((billableSeconds(talkSeconds, inc) * perMinuteCents) / 60);
}

/** Cents for speech: whole seconds (a started second counts) times the tier's per-second rate. */
export function ttsCents(perSecondCents: number, ttsSeconds: number): number {
  return Math.ceil(Math.max(0, ttsSeconds)) * perSecondCents;
}

export interface RateCallInput {
  direction: CallDirection;
  to: string;
  talkSeconds: number;
  ttsSeconds: number;
  tier?: string;
}

/** An immutable snapshot of the rates table, with the lookups the switch needs. */
export class RateCard {
  /** Outbound prefixes, longest first, so the first match is the longest prefix. */
  readonly #outbound: Array<{ prefix: string; cents: number }>;
  readonly #perMinute = new Map<'inbound' | 'internal', number>();
  readonly #tts = new Map<string, number>();
  readonly #didSetup: number;

  constructor(
    rows: RateRow[],
    readonly increment: BillingIncrement = DEFAULT_INCREMENT,
    /** The name of the default speech tier; a rate with tier '' prices it. */
    readonly defaultTier = 'standard',
  ) {
    this.#outbound = rows
      .filter((r) => r.kind === 'outbound')
      .map((r) => ({ prefix: destinationDigits(r.prefix), cents: r.amount_cents }))
      .sort((a, b) => b.prefix.length - a.prefix.length);
    let did = 0;
    for (const r of rows) {
      if (r.kind === 'inbound' || r.kind === 'internal') this.#perMinute.set(r.kind, r.amount_cents);
      else if (r.kind === 'tts') this.#tts.set(r.tier === '' ? this.defaultTier : r.tier, r.amount_cents);
      else if (r.kind === 'did_setup') did = r.amount_cents;
    }
    this.#didSetup = did;
  }

  /** Cents per minute of connected time. An outbound destination no prefix covers is refused, never free. */
  perMinute(direction: CallDirection, to: string): number {
    if (direction !== 'outbound') return this.#perMinute.get(direction) ?? 0;
    const digits = destinationDigits(to);
    const hit = this.#outbound.find((r) => digits.startsWith(r.prefix));
    if (!hit) throw new RateNotFoundError(to);
    return hit.cents;
  }

  /** Cents per second of speech for a tier; an unpriced tier costs what the default tier costs. */
  ttsPerSecond(tier = ''): number {
    const t = tier === '' ? this.defaultTier : tier;
    return this.#tts.get(t) ?? this.#tts.get(this.defaultTier) ?? 0;
  }

  didSetupCents(): number {
    return this.#didSetup;
  }

  rateCall(input: RateCallInput): { talkCents: number; ttsCents: number } {
    return {
      talkCents: talkCents(this.perMinute(input.direction, input.to), input.talkSeconds, this.increment),
      ttsCents: ttsCents(this.ttsPerSecond(input.tier), input.ttsSeconds),
    };
  }
}

export interface RateBookOptions {
  increment?: BillingIncrement;
  defaultTier?: string;
  /** How long a loaded card is trusted; an operator's rate change is seen within this time. */
  ttlMs?: number;
  clock?: Pick<Clock, 'now'>;
}

/**
 * The rates table cached in memory for a short time, so an operator's `rates set` from the CLI (another process)
 * takes effect without a restart; `invalidate()` forces a reload on the next use.
 */
export class RateBook {
  readonly increment: BillingIncrement;
  readonly #defaultTier: string;
  readonly #ttlMs: number;
  readonly #clock: Pick<Clock, 'now'>;
  #card: RateCard | undefined;
  #loadedAt = 0;
  #loading: Promise<RateCard> | undefined;

  constructor(
    private readonly db: Db,
    opts: RateBookOptions = {},
  ) {
    this.increment = opts.increment ?? DEFAULT_INCREMENT;
    this.#defaultTier = opts.defaultTier ?? 'standard';
    this.#ttlMs = opts.ttlMs ?? 5000;
    this.#clock = opts.clock ?? systemClock;
  }

  async card(): Promise<RateCard> {
    if (this.#card && this.#clock.now() - this.#loadedAt < this.#ttlMs) return this.#card;
    // One load at a time: callers arriving during a reload share it.
    this.#loading ??= listRates(this.db)
      .then((rows) => {
        this.#card = new RateCard(rows, this.increment, this.#defaultTier);
        this.#loadedAt = this.#clock.now();
        return this.#card;
      })
      .catch((e: unknown) => {
        // A store hiccup during a reload: the last card is better than refusing to rate calls.
        if (this.#card) return this.#card;
        throw e;
      })
      .finally(() => (this.#loading = undefined));
    return this.#loading;
  }

  invalidate(): void {
    this.#card = undefined;
  }

  async rateCall(input: RateCallInput): Promise<{ talkCents: number; ttsCents: number }> {
    return (await this.card()).rateCall(input);
  }
}
