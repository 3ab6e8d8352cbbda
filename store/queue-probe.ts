import type { Db } from './db.js';

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

interface TarnPool {
  on(event: string, listener: (...args: any[]) => void): void;
  removeListener(event: string, listener: (...args: any[]) => void): void;
}

/**
 * Watches the store's connection pool: every query first waits for a connection (one for SQLite, which serialises
 * writers anyway; ten for PostgreSQL), so the wait is the store's backlog. When the box takes more calls than the
 * store can write, this wait grows without bound long before the event loop lags (the work is on the driver's
 * threads), which is why overload control needs it.
 */
export function probeStoreQueue(db: Db, now: () => number = () => performance.now()): StoreQueueProbe {
  const pool = (db.client as { pool?: TarnPool }).pool;
  const waiting = new Map<number, number>(); // acquire event id -> when it was asked; insertion order = age order
  let maxWaitMs = 0;
  const onRequest = (id: number) => waiting.set(id, now());
  const onDone = (id: number) => {
    const at = waiting.get(id);
    if (at === undefined) return;
    waiting.delete(id);
    maxWaitMs = Math.max(maxWaitMs, now() - at);
  };
  pool?.on('acquireRequest', onRequest);
  pool?.on('acquireSuccess', onDone);
  pool?.on('acquireFail', onDone);
  return {
    sample() {
      const oldest = waiting.values().next();
      const s = { pending: waiting.size, oldestWaitMs: oldest.done ? 0 : now() - oldest.value, maxWaitMs };
      maxWaitMs = 0;
      return s;
    },
    close() {
      pool?.removeListener('acquireRequest', onRequest);
      pool?.removeListener('acquireSuccess', onDone);
      pool?.removeListener('acquireFail', onDone);
    },
  };
}
