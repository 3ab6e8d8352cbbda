import {
  getSetting,
  nextRollUpHour,
  oldestLiveCallHour,
  putSetting,
  rollUpCallStats,
  type Db,
} from '../store/index.js';
import { PeriodicJob } from '../kit/index.js';

const SETTING = 'call_stats_rolled_hour';

/**
 * The periodic job behind the charts: every `intervalMs` it recomputes the hourly CDR roll-up from the
 * oldest hour that can still change (the hour of its previous run, or of the oldest call in progress then or now). It reads ended
 * calls through the created_at index and writes only the roll-up tables: a call's own path is untouched.
 */
export class StatsRollup {
  readonly #job = new PeriodicJob(() => this.#run());

  constructor(
    private readonly db: Db,
    /** `readDb`: where the CDRs are aggregated (on SQLite, a read pool beside the store's one connection). */
    private readonly opts: { intervalMs?: number; onError?: (e: unknown) => void; readDb?: Db } = {},
  ) {}

  start(): this {
    this.#job.start({ everyMs: this.opts.intervalMs ?? 60_000, onError: (e) => this.opts.onError?.(e) });
    return this;
  }

  /** One roll-up now (a run already under way is awaited instead of started twice). */
  runOnce(): Promise<void> {
    return this.#job.runOnce();
  }

  async #run(): Promise<void> {
    const startedHour = new Date().toISOString().slice(0, 13);
    const last = (await getSetting(this.db, SETTING)) ?? null;
    const from = await nextRollUpHour(this.db, last);
    // Whole days before today one transaction each (a first start on an old store back-fills them all), then today.
    const today = startedHour.slice(0, 10);
    for (let h = from; h !== null;) {
      const day = h.slice(0, 10);
      await rollUpCallStats(this.db, h, day < today, this.opts.readDb);
      h = day < today ? new Date(Date.parse(`${day}T00:00:00Z`) + 86400_000).toISOString().slice(0, 13) : null;
    }
    // The next run starts at the older of this hour (calls made from now on) and the hour of the oldest call still
    // in progress now (it may end before the next run, and then its hour changes).
    const live = await oldestLiveCallHour(this.db);
    await putSetting(this.db, SETTING, live !== null && live < startedHour ? live : startedHour);
  }

  async close(): Promise<void> {
    await this.#job.close();
  }
}
