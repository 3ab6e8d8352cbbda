import { countAllLiveCalls, type Db } from '../store/index.js';
import { roomLogger, type Logger } from '../config/index.js';
import { EventCodes, type EventCode } from './catalogue.js';
import type { EventPublisher } from './publisher.js';

export interface PlatformConcurrencyMonitorOptions {
  db: Db;
  publisher: EventPublisher;
  /** PLATFORM.0001 is published at least this often, changed or not, so a staff screen opened late catches up. */
  intervalMs?: number;
  /** Recounts after a burst of call events are coalesced into one within this window. */
  debounceMs?: number;
  logger?: Logger;
}

/** Events after which the number of live calls may have changed. */
const CHANGES_COUNT: ReadonlySet<EventCode> = new Set<EventCode>([
  EventCodes.callInitiated,
  EventCodes.callCompleted,
  EventCodes.callFailed,
]);

/**
 * Keeps staff streams told of the platform-wide active-call count (PLATFORM.0001) without the calls room having
 * to call anything: it watches the bus for calls starting and ending, recounts live calls in the store (which
 * also counts calls held by other nodes), and publishes on change, plus once per `intervalMs` regardless.
 * `publisher.publishPlatformConcurrent(count)` stays available for a caller that knows the figure itself.
 */
export class PlatformConcurrencyMonitor {
  readonly #db: Db;
  readonly #publisher: EventPublisher;
  readonly #debounceMs: number;
  readonly #log: Logger;
  readonly #unobserve: () => void;
  readonly #interval: NodeJS.Timeout;
  #debounce: NodeJS.Timeout | undefined;
  #last: number | undefined;
  #closed = false;

  constructor(opts: PlatformConcurrencyMonitorOptions) {
    this.#db = opts.db;
    this.#publisher = opts.publisher;
    this.#debounceMs = opts.debounceMs ?? 100;
    this.#log = opts.logger ?? roomLogger('events');
    this.#unobserve = opts.publisher.bus.observe((e) => {
      if (CHANGES_COUNT.has(e.frame.code)) this.#scheduleRecount();
    });
    this.#interval = setInterval(() => void this.recount(true), opts.intervalMs ?? 10_000);
    this.#interval.unref();
  }

  /** Counts live calls and publishes when the figure changed (or always, when `force`). Returns the count. */
  async recount(force = false): Promise<number | undefined> {
    if (this.#closed) return undefined;
    try {
      const n = await countAllLiveCalls(this.#db);
      if (this.#closed) return n;
      if (force || n !== this.#last) this.#publisher.publishPlatformConcurrent(n);
      this.#last = n;
      return n;
    } catch (err) {
      this.#log.warn({ err }, 'platform concurrency recount failed');
      return undefined;
    }
  }

  close(): void {
    this.#closed = true;
    this.#unobserve();
    clearInterval(this.#interval);
    clearTimeout(this.#debounce);
  }

  #scheduleRecount(): void {
    if (this.#debounce || this.#closed) return;
    this.#debounce = setTimeout(() => {
      this.#debounce = undefined;
      void this.recount();
    }, this.#debounceMs);
    this.#debounce.unref();
  }
}
