import type { Context } from 'koa';
import { RequestRateLimiter } from '../api/index.js';
import type { Clock } from '../kit/index.js';
import { sourceKey } from './request-keys.js';
import { WebError } from './web-kit.js';

/** Failed sign-ins that lock an email, and for how long after the last of them. */
const MAX_FAILURES = 5;
const LOCKOUT_MS = 15 * 60_000;
/** Emails with failures remembered at most; past it, expired entries are dropped first. */
const MAX_REMEMBERED = 10_000;

/**
 * The longest email (a 64-character local part, @ and a 255-character domain), password and one-time code a
 * sign-in takes: a longer password is refused before scrypt, which would otherwise hash up to the body limit's
 * 64 KiB; a one-time code is six digits (a recovery code a little more), so 64 leaves room and no more.
 */
export const MAX_EMAIL_CHARS = 320;
export const MAX_PASSWORD_CHARS = 1024;
export const MAX_CODE_CHARS = 64;

/** A sign-in's fields as both pages read them: email trimmed and lower-cased. */
export interface SignInFields {
  email: string;
  password: string;
  code: string;
}

/**
 * The fields of a sign-in body, for the portal and the console alike; an email, password or one-time code over its
 * bound is a 400 VALIDATION_ERROR naming the field, before any lookup or password hashing.
 */
export function signInFields(body: Record<string, unknown>): SignInFields {
  const email = String(body.email ?? '')
    .trim()
    .toLowerCase();
  const password = String(body.password ?? '');
  if (email.length > MAX_EMAIL_CHARS)
    throw new WebError(400, 'VALIDATION_ERROR', `email: at most ${MAX_EMAIL_CHARS} characters.`);
  if (password.length > MAX_PASSWORD_CHARS)
    throw new WebError(400, 'VALIDATION_ERROR', `password: at most ${MAX_PASSWORD_CHARS} characters.`);
  const code = String(body.code ?? '');
  if (code.length > MAX_CODE_CHARS)
    throw new WebError(400, 'VALIDATION_ERROR', `code: at most ${MAX_CODE_CHARS} characters.`);
  return { email, password, code };
}

/** The stable codes of a sign-in's refusals (each page has its own). */
export interface SignInCodes {
  /** 429: the source address spent its budget. */
  throttled: string;
  /** 429: the email is locked out. */
  locked: string;
  /** 401: the email, password or one-time code is wrong. */
  failed: string;
}

/**
 * What stands before a sign-in's password check, for the portal and the console alike: a budget of attempts per
 * source address (IPv6: per /64), taken before anything else, so a spray of invented emails (each its own lockout
 * counter) cannot buy unbounded scrypt work; and a lockout of an email after MAX_FAILURES failures in a row, each
 * within LOCKOUT_MS of the one before. Its refusals are WebErrors with the page's codes.
 */
export class SignInGuard {
  readonly #failures = new Map<string, { count: number; until: number }>();
  readonly #limiter: RequestRateLimiter;
  readonly #codes: SignInCodes;

  constructor(o: { perMinute: number; burst: number; clock: Pick<Clock, 'now'>; codes: SignInCodes }) {
    this.#limiter = new RequestRateLimiter({ ratePerSecond: o.perMinute / 60, burst: o.burst, clock: o.clock });
    this.#codes = o.codes;
  }

  /** Spends an attempt of the request's source; one over its budget is refused, with Retry-After. */
  admit(ctx: Context): void {
    const admit = this.#limiter.take(sourceKey(ctx.ip));
    if (admit.ok) return;
    ctx.set('Retry-After', String(admit.retryAfterSeconds));
    throw new WebError(429, this.#codes.throttled, 'Too many sign-in attempts from this address; wait a little.');
  }

  /** Refuses an email that is locked out now. */
  refuseLocked(email: string, now: number): void {
    const f = this.#failures.get(email);
    if (f && f.count >= MAX_FAILURES && f.until > now)
      throw new WebError(429, this.#codes.locked, 'Too many failed sign-ins; try again later.');
  }

  /** A sign-in of the email failed: counted, and the error to answer with. Memory stays bounded under a spray. */
  failed(email: string, now: number): WebError {
    const f = this.#failures.get(email);
    const count = f && f.until > now ? f.count + 1 : 1;
    if (this.#failures.size > MAX_REMEMBERED)
      for (const [k, v] of this.#failures) if (v.until <= now) this.#failures.delete(k);
    this.#failures.set(email, { count, until: now + LOCKOUT_MS });
    return new WebError(401, this.#codes.failed, 'Email, password or one-time code is wrong.');
  }

  /** A sign-in of the email succeeded: its failures are forgotten. */
  succeeded(email: string): void {
    this.#failures.delete(email);
  }
}
