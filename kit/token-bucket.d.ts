/** The one token bucket (token-bucket.js, plain JavaScript so worker threads load it too). */
export declare class TokenBucket {
  ratePerSecond: number;
  burst: number;
  tokens: number;
  /** When it was last refilled, ms of the caller's clock. */
  at: number;
  constructor(o: { ratePerSecond: number; burst: number; tokens?: number; at?: number });
  configure(ratePerSecond: number, burst: number): void;
  peek(now: number): number;
  refill(now: number): number;
  take(now: number): boolean;
  takeOwing(now: number, maxDebt: number): void;
  keepAtMost(max: number): void;
  msUntilToken(): number;
}

/** The URL of token-bucket.js, for a worker thread to import it. */
export declare const TOKEN_BUCKET_MODULE: string;
