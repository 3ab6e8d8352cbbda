// @ts-check
/**
 * The one token bucket: `burst` tokens at most, refilled continuously at `ratePerSecond`; a use takes one. Plain
 * JavaScript with its types in token-bucket.d.ts, so the SIP UDP front's worker thread, which runs without the
 * TypeScript loader, loads the same module (its URL is `TOKEN_BUCKET_MODULE`, exported by kit/index.ts) as overload
 * control and the API's request rate limiter.
 *
 * Time is what the caller passes (milliseconds of its clock); the bucket never reads a clock itself.
 */
export class TokenBucket {
  /**
   * @param {{ ratePerSecond: number, burst: number, tokens?: number, at?: number }} o a full bucket unless `tokens`
   *   is given; `at` is when it was last refilled.
   */
  constructor(o) {
    this.ratePerSecond = o.ratePerSecond;
    this.burst = o.burst;
    this.tokens = o.tokens ?? o.burst;
    this.at = o.at ?? 0;
  }

  /**
   * Changes the rate and the size. Time since the last refill is credited at the new rate on the next refill, as
   * the bucket is refilled only when used.
   * @param {number} ratePerSecond
   * @param {number} burst
   */
  configure(ratePerSecond, burst) {
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
  }

  /**
   * The tokens `now` had the bucket been refilled, without refilling it.
   * @param {number} now
   */
  peek(now) {
    return Math.min(this.burst, this.tokens + (Math.max(0, now - this.at) / 1000) * this.ratePerSecond);
  }

  /**
   * Adds what was earned since the last refill (never beyond `burst`); returns the tokens held.
   * @param {number} now
   */
  refill(now) {
    this.tokens = this.peek(now);
    this.at = now;
    return this.tokens;
  }

  /**
   * Takes one token if there is one: true when taken.
   * @param {number} now
   */
  take(now) {
    if (this.refill(now) < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Takes one token even when there is none, going into debt down to `-maxDebt` at most: a use admitted elsewhere
   * still counts against this bucket's rate.
   * @param {number} now
   * @param {number} maxDebt
   */
  takeOwing(now, maxDebt) {
    this.refill(now);
    this.tokens = Math.max(-maxDebt, this.tokens - 1);
  }

  /**
   * Keeps at most `max` tokens (a lower rate was just set: what was saved at the higher one is not spent at once).
   * @param {number} max
   */
  keepAtMost(max) {
    this.tokens = Math.min(this.tokens, max);
  }

  /**
   * Milliseconds until a token will be there (0 when there is one now), as of the last refill.
   */
  msUntilToken() {
    return this.tokens >= 1 ? 0 : ((1 - this.tokens) / this.ratePerSecond) * 1000;
  }
}

/** The URL of this module, for a worker thread to import it. */
export const TOKEN_BUCKET_MODULE = import.meta.url;
