import type { Db } from './db.js';
import { purgeFinishedOutboxRows } from './event-outbox.js';
import { purgeIdempotencyKeys } from './idempotency-keys.js';
import { purgeStreamTokens } from './stream-tokens.js';

/** How many rows one sweep removed, by what they were. */
export interface SweptRows {
  /** Status callbacks delivered or given up more than the retention ago. */
  callbacks: number;
  /** Idempotency keys past their window. */
  idempotencyKeys: number;
  /** Media-stream tokens past their expiry. */
  streamTokens: number;
}

const DAY_MS = 86_400_000;

/**
 * One sweep of rows no one reads any more: finished status callbacks older than `callbackRetentionDays` (with them
 * go the delivered WH.0200 events a call's event list builds from them), expired idempotency keys and media-stream
 * tokens. Pending callbacks are never touched. Safe on several nodes at once: each delete is of rows past a time.
 */
export async function sweepExpiredRows(
  db: Db,
  now: Date,
  callbackRetentionDays: number,
  signal?: AbortSignal,
): Promise<SweptRows> {
  const before = new Date(now.getTime() - callbackRetentionDays * DAY_MS).toISOString();
  return {
    callbacks: await purgeFinishedOutboxRows(db, before, signal),
    idempotencyKeys: await purgeIdempotencyKeys(db, now, signal),
    streamTokens: await purgeStreamTokens(db, now, signal),
  };
}

/**
 * The switch's housekeeping: a sweep a minute after start, then every `intervalMs` (an hour). A sweep that fails is
 * reported to `onError` and tried again at the next interval; closing ends a sweep after the batch in hand.
 */
export class Housekeeping {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  readonly #stop = new AbortController();

  constructor(
    private readonly o: {
      db: Db;
      callbackRetentionDays: number;
      onSwept: (rows: SweptRows) => void;
      onError: (err: unknown) => void;
      firstMs?: number;
      intervalMs?: number;
    },
  ) {}

  start(): this {
    this.#schedule(this.o.firstMs ?? 60_000);
    return this;
  }

  /** One sweep now (the timer's, or a test's). */
  sweep(): Promise<void> {
    this.#running ??= sweepExpiredRows(this.o.db, new Date(), this.o.callbackRetentionDays, this.#stop.signal)
      .then(this.o.onSwept, this.o.onError)
      .finally(() => (this.#running = undefined));
    return this.#running;
  }

  async close(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(ms: number): void {
    if (this.#stop.signal.aborted) return;
    this.#timer = setTimeout(() => {
      void this.sweep().finally(() => this.#schedule(this.o.intervalMs ?? 3_600_000));
    }, ms);
    this.#timer.unref();
  }
}
