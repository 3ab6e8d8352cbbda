import { PeriodicJob } from '../kit/index.js';
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
 * The switch's housekeeping: a sweep at start and then every `intervalMs` (an hour), never two at once (a PeriodicJob).
 * A sweep that fails is reported to `onError` and the next one goes ahead; closing ends a sweep after the batch in
 * hand.
 */
export class Housekeeping {
  readonly #stop = new AbortController();
  readonly #job = new PeriodicJob(async () => {
    const rows = await sweepExpiredRows(this.o.db, new Date(), this.o.callbackRetentionDays, this.#stop.signal);
    this.o.onSwept(rows);
    return rows;
  });

  constructor(
    private readonly o: {
      db: Db;
      callbackRetentionDays: number;
      onSwept: (rows: SweptRows) => void;
      onError: (err: unknown) => void;
      intervalMs?: number;
    },
  ) {}

  start(): this {
    this.#job.start({ everyMs: this.o.intervalMs ?? 3_600_000, onError: this.o.onError, name: 'housekeeping' });
    return this;
  }

  /** One sweep now, or the one under way; what it deleted also goes to `onSwept`. */
  sweep(): Promise<SweptRows> {
    return this.#job.runOnce();
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#job.close();
  }
}
