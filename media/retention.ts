import type { Logger } from '../config/index.js';
import { PeriodicJob, systemClock, type Clock } from '../kit/index.js';
import { findPurgeableRecordings, markRecordingMediaDeleted, type Db } from '../store/index.js';
import { LocalMediaStorage } from './media-storage.js';

export interface RecordingRetentionOptions {
  db: Db;
  dataDir: string;
  log: Logger;
  /** How often the sweep runs; hourly by default (expiry is counted in days). */
  intervalMs?: number;
  /** Recordings handled per batch, so one sweep never holds the store for long. */
  batchSize?: number;
  clock?: Pick<Clock, 'now'>;
}

/**
 * The retention sweep: removes the audio of recordings that have expired (`expires_at` passed) or that
 * the customer soft-deleted, and sets `media_deleted_at`. Rows stay, so duration, size and dates remain truthful;
 * the download endpoints refuse such a recording (404 RECORDING_NOT_FOUND, docs/assets.md).
 */
export class RecordingRetention {
  readonly #o: Required<RecordingRetentionOptions>;
  readonly #storage: LocalMediaStorage;
  readonly #job = new PeriodicJob(() => this.#sweep());

  constructor(o: RecordingRetentionOptions) {
    this.#o = { intervalMs: 3600_000, batchSize: 200, clock: systemClock, ...o };
    this.#storage = new LocalMediaStorage(o.dataDir);
  }

  /** Runs once now and then every interval. */
  start(): this {
    this.#job.start({
      everyMs: this.#o.intervalMs,
      onError: (e) => this.#o.log.error({ err: e }, 'recording retention sweep failed'),
    });
    return this;
  }

  /** One sweep; answers how many recordings lost their media. Overlapping calls share one sweep. */
  runOnce(): Promise<number> {
    return this.#job.runOnce();
  }

  async #sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const now = new Date(this.#o.clock.now());
      const batch = await findPurgeableRecordings(this.#o.db, now, this.#o.batchSize);
      for (const r of batch) {
        // Only local media exists today; a row of another backend is marked once its backend can delete it.
        if (r.storage_backend !== 'local') continue;
        if (r.storage_path) await this.#storage.remove(r.storage_path);
        await markRecordingMediaDeleted(this.#o.db, r.id, now);
        total++;
      }
      if (batch.length < this.#o.batchSize || batch.every((r) => r.storage_backend !== 'local')) break;
    }
    if (total) this.#o.log.info({ recordings: total }, 'recording media removed by retention');
    return total;
  }

  async close(): Promise<void> {
    await this.#job.close();
  }
}
