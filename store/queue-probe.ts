import { driverOf, type Db } from './db.js';

/** How far behind the store is: what overload control reads (overload/overload-control.ts). */
export interface StoreQueueSample {
  /** Queries waiting for a connection now. */
  pending: number;
  /** How long the oldest of them has waited, in ms (0 when none waits). */
  oldestWaitMs: number;
  /** The longest wait for a connection among the queries that got one since the previous sample, in ms. */
  maxWaitMs: number;
}

export interface StoreQueueProbe {
  sample(): StoreQueueSample;
  close(): void;
}

/**
 * Watches how long statements wait for a connection (one for SQLite, which serialises writers anyway, held by a
 * transaction while it runs; ten for PostgreSQL), so the wait is the store's backlog. When the box takes more calls
 * than the store can write, this wait grows without bound long before the event loop lags, which is why overload
 * control needs it.
 */
export function probeStoreQueue(db: Db): StoreQueueProbe {
  const driver = driverOf(db);
  driver.sampleQueue(); // from now on
  return { sample: () => driver.sampleQueue(), close() {} };
}
