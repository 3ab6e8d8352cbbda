import { notifyAll, type WriteNotice } from './driver/types.js';

/**
 * The write notices of each open store (store/db.ts): its driver's, knex's statements' (tests, migrations), and
 * other processes' (store/other-writers.ts). Caches (store/read-cache.ts, the phone-token credentials) listen here.
 */
const hubs = new WeakMap<object, Set<(n: WriteNotice) => void>>();

function hubOf(db: object): Set<(n: WriteNotice) => void> {
  let hub = hubs.get(db);
  if (hub === undefined) {
    hub = new Set();
    hubs.set(db, hub);
  }
  return hub;
}

/** Calls `fn` with every write notice of the store `db` from now on; returns the unsubscribe. */
export function onWrites(db: object, fn: (n: WriteNotice) => void): () => void {
  const hub = hubOf(db);
  hub.add(fn);
  return () => void hub.delete(fn);
}

/** Tells the listeners of `db` about a write. */
export function announce(db: object, n: WriteNotice): void {
  const hub = hubs.get(db);
  if (hub !== undefined && hub.size > 0) notifyAll(hub, n);
}

/** A write to any table, or to `table`, seen outside the driver (knex, another process). */
export const writeOutside = (table: string | undefined): WriteNotice => ({
  kind: 'write',
  table,
  columns: undefined,
  tx: undefined,
  done: true,
});
