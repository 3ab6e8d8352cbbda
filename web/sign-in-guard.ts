import type { Context } from 'koa';
import { RequestRateLimiter } from '../api/index.js';
import type { Clock } from '../kit/index.js';
import { sourceKey } from './request-keys.js';

/** Failed sign-ins that lock an email, and for how long after the last of them. */
const MAX_FAILURES = 5;
const LOCKOUT_MS = 15 * 60_000;
/** Emails with failures remembered at most; past it, expired entries are dropped first. */
const MAX_REMEMBERED = 10_000;

/**
 * What stands before a sign-in's password check, for the portal and the console alike: a budget of attempts per
 * source address (IPv6: per /64), taken before anything else, so a spray of invented emails (each its own lockout
 * counter) cannot buy unbounded scrypt work; and a lockout of an email after MAX_FAILURES failures in a row, each
 * within LOCKOUT_MS of the one before.
 */
export class SignInGuard {
  readonly #failures = new Map<string, { count: number; until: number }>();
  readonly #limiter: RequestRateLimiter;

  constructor(o: { perMinute: number; burst: number; clock: Pick<Clock, 'now'> }) {
    this.#limiter = new RequestRateLimiter({ ratePerSecond: o.perMinute / 60, burst: o.burst, clock: o.clock });
  }

  /** Spends an attempt of the request's source; one over its budget gets Retry-After and `throttled()` is thrown. */
  admit(ctx: Context, throttled: () => Error): void {
    const admit = this.#limiter.take(sourceKey(ctx.ip));
    if (admit.ok) return;
    ctx.set('Retry-After', String(admit.retryAfterSeconds));
    throw throttled();
  }

  /** The email is locked out now. */
  locked(email: string, now: number): boolean {
    const f = this.#failures.get(email);
    return !!f && f.count >= MAX_FAILURES && f.until > now;
  }

  /** A sign-in of the email failed. Memory stays bounded under a spray of invented emails. */
  failed(email: string, now: number): void {
    const f = this.#failures.get(email);
    const count = f && f.until > now ? f.count + 1 : 1;
    if (this.#failures.size > MAX_REMEMBERED)
      for (const [k, v] of this.#failures) if (v.until <= now) this.#failures.delete(k);
    this.#failures.set(email, { count, until: now + LOCKOUT_MS });
  }

  /** A sign-in of the email succeeded: its failures are forgotten. */
  succeeded(email: string): void {
    this.#failures.delete(email);
  }
}
