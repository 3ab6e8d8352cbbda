import type { Context, Next } from 'koa';
import { TokenBucket, systemClock, type Clock } from '../kit/index.js';
import { ApiError } from './errors.js';

/** Over the per-key or per-account request rate (distinct from LIMIT.0429 / LIMIT.0430, which are call caps). */
export class RateLimitedError extends ApiError {
  constructor(
    readonly retryAfterSeconds: number,
    readonly scope: 'key' | 'account' = 'key',
  ) {
    const whose = scope === 'key' ? 'this API key' : "this API key's account";
    super(429, 'RATE_LIMITED', `Too many requests for ${whose}; retry in ${retryAfterSeconds} s.`, {
      'Retry-After': String(retryAfterSeconds),
    });
    this.name = 'RateLimitedError';
  }
}

export interface RequestRateLimiterOptions {
  /** Sustained requests per second per key (the refill rate). */
  ratePerSecond: number;
  /** Bucket size: how many requests a key may make at once. */
  burst: number;
  /** Injected by tests. */
  clock?: Pick<Clock, 'now'>;
  /** Most buckets kept; beyond it idle (full) buckets are dropped, then the least recently used. */
  maxBuckets?: number;
}

export type Admit = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * A token bucket per key: `burst` tokens, refilled continuously at `ratePerSecond`; each request takes one.
 * A bucket that has refilled to full holds no information (a fresh bucket is the same), so idle buckets are
 * dropped and memory stays bounded by the number of keys active within one refill period.
 */
export class RequestRateLimiter {
  readonly #ratePerSecond: number;
  readonly #burst: number;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #max: number;
  readonly #buckets = new Map<string, TokenBucket>();
  #lastSweep: number;

  constructor(o: RequestRateLimiterOptions) {
    if (!(o.ratePerSecond > 0) || !(o.burst >= 1)) throw new RangeError('rate must be > 0 and burst >= 1');
    this.#ratePerSecond = o.ratePerSecond;
    this.#burst = o.burst;
    this.#clock = o.clock ?? systemClock;
    this.#max = o.maxBuckets ?? 100_000;
    this.#lastSweep = this.#clock.now();
  }

  /** Buckets currently held (for tests of the bound). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Takes one token for `key`, or says how long until one is available. */
  take(key: string): Admit {
    const now = this.#clock.now();
    this.#maybeSweep(now);
    let b = this.#buckets.get(key);
    if (b)
      this.#buckets.delete(key); // re-inserted below: Map order is then least recently used first
    else b = new TokenBucket({ ratePerSecond: this.#ratePerSecond, burst: this.#burst, at: now });
    this.#buckets.set(key, b);
    if (!b.take(now))
      // Retry-After is whole seconds (RFC 9110, 10.2.3), rounded up and never 0.
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(b.msUntilToken() / 1000)) };
    if (this.#buckets.size > this.#max) this.#sweep(now, true);
    return { ok: true };
  }

  #maybeSweep(now: number): void {
    // Sweep about once per full-refill period; each sweep is O(buckets), so this is amortised O(1) per request.
    if (now - this.#lastSweep >= Math.max(1000, (1000 * this.#burst) / this.#ratePerSecond)) this.#sweep(now, false);
  }

  #sweep(now: number, overflow: boolean): void {
    this.#lastSweep = now;
    for (const [k, b] of this.#buckets) if (b.peek(now) >= this.#burst) this.#buckets.delete(k);
    if (!overflow) return;
    // Still too many active keys: forget the least recently used (they get a fresh burst: bounded over exact).
    for (const k of this.#buckets.keys()) {
      if (this.#buckets.size <= this.#max) break;
      this.#buckets.delete(k);
    }
  }
}

/** One limit the middleware applies: a limiter and what a request is counted against. */
export interface RateLimitScope {
  scope: 'key' | 'account';
  limiter: RequestRateLimiter;
  keyOf: (ctx: Context) => string | undefined;
}

/**
 * Koa middleware placed right after API-key authentication: each request takes a token from every scope (its key's
 * bucket, then its account's), so minting more keys does not raise an account's rate. Call placement
 * (originate, hangup) is exempt: it is governed by the account's concurrency and CPS caps (spec, Limits), whose
 * 429s carry LIMIT.0429 / LIMIT.0430.
 */
export function rateLimit(scopes: RateLimitScope[]) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!isCallPlacement(ctx.path))
      for (const s of scopes) {
        const key = s.keyOf(ctx);
        if (key === undefined) continue;
        const r = s.limiter.take(key);
        if (!r.ok) throw new RateLimitedError(r.retryAfterSeconds, s.scope);
      }
    await next();
  };
}

const CALL_PLACEMENT = /^\/api\/calls\/(?:originate|hangup(?:\/[^/]+)?)$/;

export const isCallPlacement = (path: string): boolean => CALL_PLACEMENT.test(path);
