import type { Knex } from 'knex';

/** The store's root instance (store/db.ts's Db, named here so that db.ts may use this module). */
type Db = Knex;

/**
 * A small per-process cache of rows that every call reads and almost nothing writes (an account's static fields,
 * a number, a platform setting), so the hot path does not read them once per event.
 *
 * Invalidation sees every statement of the store's knex instance (its 'query' event, transactions included): an
 * insert, update or delete on a cached table drops that table's entries at once. A write inside a transaction
 * keeps the table uncached until that transaction ends, and for a grace period after its COMMIT is sent, so a
 * reader on another connection (PostgreSQL) cannot cache the value from before the commit; a read that started
 * before a write landed is not kept. Writers in other processes (the CLI, another node) are seen by the switch's
 * store (openDb's watchOtherWriters, store/other-writers.ts): within 50 ms on SQLite, at their commit on
 * PostgreSQL; `ttlMs` bounds what a lost watch misses. Never used for a figure that decides money (the balance):
 * that is read in the transaction that moves it.
 */
const TTL_MS = 2000;
const COMMIT_GRACE_MS = 1000;
const MAX_ENTRIES = 10_000;

interface QueryEvent {
  sql?: string;
  __knexTxId?: string;
}

class TableCache {
  generation = 0;
  readonly entries = new Map<string, { value: unknown; at: number }>();
  /** Loads under way, by key: a reader arriving meanwhile waits for the same one. */
  readonly loading = new Map<string, Promise<unknown>>();
  /** Transactions that wrote this table and have not ended. */
  readonly openTx = new Set<string>();
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

const WRITE = /^\s*(?:insert\s+(?:or\s+\w+\s+)?into|replace\s+into|update|delete\s+from)\s+[`"]?(\w+)[`"]?/i;
const END_TX = /^\s*(?:commit|rollback)\b/i;
/** Columns never cached, whose writes therefore leave a table's entries valid (the ledger moves the balance). */
export const UNCACHED_COLUMNS: Readonly<Record<string, ReadonlySet<string>>> = {
  accounts: new Set(['balance_cents']),
};
const SET_CLAUSE = /\bset\s+(.*?)(?:\s+where\b|$)/is;

/** The table a statement writes, unless it only sets columns that are never cached. */
function writtenTable(sql: string): string | undefined {
  const w = WRITE.exec(sql);
  if (!w) return undefined;
  const table = w[1]!.toLowerCase();
  const skip = UNCACHED_COLUMNS[table];
  if (skip && /^\s*update\b/i.test(sql)) {
    const set = SET_CLAUSE.exec(sql)?.[1];
    const cols = set?.split(',').map((a) => a.split('=')[0]!.trim().replace(/[`"]/g, '').toLowerCase());
    if (cols && cols.length > 0 && cols.every((col) => skip.has(col))) return undefined;
  }
  return table;
}

const byDb = new WeakMap<object, Map<string, TableCache>>();

function tablesOf(db: Db): Map<string, TableCache> {
  const known = byDb.get(db);
  if (known) return known;
  const t = new Map<string, TableCache>();
  byDb.set(db, t);
  const seen = (q: QueryEvent): void => {
    const sql = q.sql ?? '';
    const table = writtenTable(sql);
    if (table) {
      const c = t.get(table);
      if (!c) return;
      c.invalidate();
      if (q.__knexTxId) c.openTx.add(q.__knexTxId);
      return;
    }
    if (q.__knexTxId && END_TX.test(sql)) {
      for (const c of t.values()) {
        if (!c.openTx.delete(q.__knexTxId)) continue;
        c.invalidate();
        c.graceUntil = Date.now() + COMMIT_GRACE_MS;
      }
    }
  };
  db.on('query', seen);
  // After the statement ran too: a read that raced the write is not kept (its generation moved).
  db.on('query-response', (_r: unknown, q: QueryEvent) => {
    const table = writtenTable(q.sql ?? '');
    if (table) t.get(table)?.invalidate();
  });
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
  // call arriving meanwhile read the row again (about half a statement per call under the carrier bench). A write
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

/**
 * Drops every cached row of `table`, or of every table when undefined: for a writer that bypasses the store's knex
 * instance, and for the writes of other processes.
 */
export function forgetCached(db: Db, table: string | undefined): void {
  const tables = tablesOf(db);
  if (table !== undefined) tables.get(table)?.invalidate();
  else for (const c of tables.values()) c.invalidate();
}
