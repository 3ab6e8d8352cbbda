import type { WriteNotice } from './driver/types.js';
import { onWrites } from './notices.js';

/** The store's root object (store/db.ts's Db): what the cache listens to. */
type Db = object;

/**
 * A small per-process cache of rows that every call reads and almost nothing writes (an account's static fields,
 * a number, a platform setting), so the hot path does not read them once per event.
 *
 * Invalidation follows the store's write notices (store/notices.ts: its driver's, transactions included, and any
 * statement knex sends, which may write any table): a write to a cached table drops that table's entries at once.
 * A write inside a transaction keeps the table uncached until that transaction ends, and for a grace period after its
 * COMMIT is sent, so a reader on another connection (PostgreSQL) cannot cache the value from before the commit; a read
 * that started before a write landed is not kept. Writers in other processes (the CLI, another node) are seen by the
 * switch's store (openDb's watchOtherWriters, store/other-writers.ts): within 50 ms on SQLite, at their commit on
 * PostgreSQL; `ttlMs` bounds what a lost watch misses. Never used for a figure that decides money (the balance):
 * that is read in the transaction that moves it.
 */
const TTL_MS = 2000;
const COMMIT_GRACE_MS = 1000;
const MAX_ENTRIES = 10_000;

class TableCache {
  generation = 0;
  readonly entries = new Map<string, { value: unknown; at: number }>();
  /** Loads under way, by key: a reader arriving meanwhile waits for the same one. */
  readonly loading = new Map<string, Promise<unknown>>();
  /** Transactions that wrote this table and have not ended. */
  readonly openTx = new Set<number>();
  graceUntil = 0;

  invalidate(): void {
    this.generation += 1;
    this.entries.clear();
    this.loading.clear();
  }

  get cacheable(): boolean {
    return this.openTx.size === 0 && Date.now() >= this.graceUntil;
  }
}

/**
 * The tables cached. On PostgreSQL each has a trigger notifying other processes of its writes
 * (store/change-notify.ts): a table added here needs a migration that creates its trigger.
 */
export const CACHED_TABLES = [
  'accounts',
  'destination_rules',
  'numbers',
  'platform_settings',
  'rates',
  'webhook_routes',
] as const;
export type CachedTable = (typeof CACHED_TABLES)[number];

/** Columns never cached, whose writes therefore leave a table's entries valid (the ledger moves the balance). */
export const UNCACHED_COLUMNS: Readonly<Record<string, ReadonlySet<string>>> = {
  accounts: new Set(['balance_cents']),
};

/** Whether a write leaves the table's cached entries valid: it set only columns that are never cached. */
function keepsEntries(table: string, columns: readonly string[] | undefined): boolean {
  const skip = UNCACHED_COLUMNS[table];
  return skip !== undefined && columns !== undefined && columns.length > 0 && columns.every((c) => skip.has(c));
}

const byDb = new WeakMap<object, Map<string, TableCache>>();

function tablesOf(db: Db): Map<string, TableCache> {
  const known = byDb.get(db);
  if (known) return known;
  const t = new Map<string, TableCache>();
  byDb.set(db, t);
  // A write drops the table's entries as it is sent and again after it ran (a read that raced it is not kept: its
  // generation moved); in a transaction the table stays uncached until the transaction ends, then for a grace.
  const seen = (n: WriteNotice): void => {
    if (n.kind === 'end') {
      if (n.done) return;
      for (const c of t.values()) {
        if (!c.openTx.delete(n.tx)) continue;
        c.invalidate();
        c.graceUntil = Date.now() + COMMIT_GRACE_MS;
      }
      return;
    }
    const hit = n.table === undefined ? [...t.values()] : [t.get(n.table)];
    for (const c of hit) {
      if (c === undefined || (n.table !== undefined && keepsEntries(n.table, n.columns))) continue;
      c.invalidate();
      if (n.tx !== undefined && !n.done) c.openTx.add(n.tx);
    }
  };
  onWrites(db, seen);
  return t;
}

/**
 * `load()`'s value for (table, key), from the cache when fresh. `db` must be the store's root instance (not a
 * transaction): it is what the cache listens to.
 */
export async function cachedRead<T>(
  db: Db,
  table: CachedTable,
  key: string,
  load: () => Promise<T>,
  ttlMs = TTL_MS,
): Promise<T> {
  const tables = tablesOf(db);
  let c = tables.get(table);
  if (!c) {
    c = new TableCache();
    tables.set(table, c);
  }
  const hit = c.entries.get(key);
  if (hit && Date.now() - hit.at < ttlMs) return hit.value as T;
  // One load per key at a time: on PostgreSQL a load is a round trip (longer while the pool is busy), and every
  // call arriving meanwhile would read the row again. A write
  // drops the load under way with the entries, so a reader after it starts its own.
  const loading = c.loading.get(key);
  if (loading) return loading as Promise<T>;
  const cache = c;
  const generation = cache.generation;
  const mine: { run?: Promise<T> } = {};
  const run = (async () => {
    await undefined; // `run` is in the map before the load can end, even when it throws at once
    try {
      const value = await load();
      if (cache.generation === generation && cache.cacheable) {
        if (cache.entries.size >= MAX_ENTRIES) cache.entries.clear();
        cache.entries.set(key, { value, at: Date.now() });
      }
      return value;
    } finally {
      if (cache.loading.get(key) === mine.run) cache.loading.delete(key);
    }
  })();
  mine.run = run;
  cache.loading.set(key, run);
  return run;
}

/** Drops every cached row of `table`, or of every table when undefined. */
export function forgetCached(db: Db, table: string | undefined): void {
  const tables = tablesOf(db);
  if (table !== undefined) tables.get(table)?.invalidate();
  else for (const c of tables.values()) c.invalidate();
}
