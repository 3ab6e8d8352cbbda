import {
  callPositionAt,
  callsGeneration,
  countCalls,
  listCalls,
  type CallFilter,
  type CallPosition,
  type CallRow,
  type Db,
} from '../store/index.js';
import { systemClock, type Clock } from '../kit/index.js';

/** A count that took longer than this is "expensive": it is then refreshed in the background. */
const EXPENSIVE_MS = 20;
/** A search matching more calls than this walks the list order instead of the trigram index. */
const DENSE_SEARCH = 5000;
/** Anchors are kept every this many rows of a filter's order. */
export const ANCHOR_STRIDE = 10_000;

interface Entry {
  total: number;
  generation: number;
  at: number;
  costMs: number;
}

const filterKey = (f: CallFilter): string =>
  JSON.stringify([f.accountId, f.direction, f.status, f.search, f.fromIso, f.toIso, f.searchStrategy]);

/**
 * The calls list over a million CDRs: the `total` and deep offsets are the costly parts (docs/api.md, "total").
 *
 * - Totals are cached per (account, filter). An entry is fresh while no call of the account was written through
 *   this process (store generation) and it is younger than `ttlMs` (bounding staleness after writes by other
 *   processes). A stale entry whose count is cheap is recounted at once; one whose count is expensive is served
 *   while a single background recount runs (stale-while-revalidate), so no request waits on a million-row count
 *   after the first.
 * - Deep offsets start from anchors: the list position of every ANCHOR_STRIDE-th row, kept under the same
 *   freshness rule, so offset 800,050 reads 50 index entries past the 800,000 anchor instead of 800,050.
 */
/** Rows kept in the page cache at most, across all pages (about 10 MB of CDRs). */
const PAGE_ROWS_MAX = 20_000;

export class CallListCache {
  readonly #totals = new Map<string, Entry>();
  /** Pages served recently: exact while the account's calls were not written in this process (generation). */
  readonly #pages = new Map<string, { rows: CallRow[]; generation: number; at: number }>();
  readonly #pendingPages = new Map<string, Promise<CallRow[]>>();
  #pageRows = 0;
  readonly #pending = new Map<string, Promise<number>>();
  readonly #anchors = new Map<string, { generation: number; at: number; byOffset: Map<number, CallPosition> }>();

  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly stride: number;
  private readonly pageTtlMs: number;

  /**
   * `ttlMs` bounds totals and anchors, `pageTtlMs` pages (0: pages are not kept), both against writes by other
   * processes; writes through this process invalidate at once.
   */
  constructor(
    private readonly db: Db,
    o: { ttlMs?: number; maxEntries?: number; clock?: Pick<Clock, 'now'>; stride?: number; pageTtlMs?: number } = {},
  ) {
    this.ttlMs = o.ttlMs ?? 5000;
    this.maxEntries = o.maxEntries ?? 10_000;
    this.clock = o.clock ?? systemClock;
    this.stride = o.stride ?? ANCHOR_STRIDE;
    this.pageTtlMs = o.pageTtlMs ?? 1000;
  }

  async total(f: CallFilter): Promise<number> {
    const key = filterKey(f);
    const generation = callsGeneration(f.accountId);
    const hit = this.#totals.get(key);
    const fresh = hit && hit.generation === generation && this.clock.now() - hit.at < this.ttlMs;
    if (hit && fresh) return hit.total;
    const recount = this.#recount(key, f, generation);
    if (hit && hit.costMs > EXPENSIVE_MS) {
      recount.catch(() => undefined);
      return hit.total;
    }
    return recount;
  }

  #recount(key: string, f: CallFilter, generation: number): Promise<number> {
    const pendingKey = `${key}#${generation}`;
    let pending = this.#pending.get(pendingKey);
    if (!pending) {
      const started = this.clock.now();
      pending = countCalls(this.db, f)
        .then((total) => {
          if (this.#totals.size >= this.maxEntries) this.#totals.clear();
          this.#totals.set(key, { total, generation, at: this.clock.now(), costMs: this.clock.now() - started });
          return total;
        })
        .finally(() => this.#pending.delete(pendingKey));
      this.#pending.set(pendingKey, pending);
    }
    return pending;
  }

  /**
   * One page of the list. A page asked for again is served from memory while no call of the account was written
   * through this process since (the store's generation: any insert or update of a call) and it is younger than
   * `pageTtlMs` (bounding staleness after writes by other processes); a dashboard polling the first page, or many
   * clients reading the same one, cost one query per change instead of one per request.
   */
  async page(filter: CallFilter, limit: number, offset: number): Promise<CallRow[]> {
    if (this.pageTtlMs <= 0) return this.#page(filter, limit, offset);
    const key = `${filterKey(filter)}|${limit}|${offset}`;
    const generation = callsGeneration(filter.accountId);
    const hit = this.#pages.get(key);
    if (hit && hit.generation === generation && this.clock.now() - hit.at < this.pageTtlMs) return hit.rows;
    // Requests that miss together share one query (no stampede when an entry expires under load).
    const pendingKey = `${key}#${generation}`;
    let pending = this.#pendingPages.get(pendingKey);
    if (!pending) {
      pending = this.#page(filter, limit, offset)
        .then((rows) => {
          this.#forgetPage(key);
          this.#pages.set(key, { rows, generation, at: this.clock.now() });
          this.#pageRows += rows.length;
          while (this.#pageRows > PAGE_ROWS_MAX) this.#forgetPage(this.#pages.keys().next().value!);
          return rows;
        })
        .finally(() => this.#pendingPages.delete(pendingKey));
      this.#pendingPages.set(pendingKey, pending);
    }
    return pending;
  }

  #forgetPage(key: string): void {
    const old = this.#pages.get(key);
    if (!old) return;
    this.#pages.delete(key);
    this.#pageRows -= old.rows.length;
  }

  async #page(filter: CallFilter, limit: number, offset: number): Promise<CallRow[]> {
    // A search that matches many calls is found faster by walking the list order than through the index.
    const f: CallFilter = filter.search
      ? { ...filter, searchStrategy: (await this.total(filter)) > DENSE_SEARCH ? 'scan' : 'index' }
      : filter;
    if (offset < this.stride) return listCalls(this.db, f, limit, offset);
    const bucket = Math.floor(offset / this.stride) * this.stride;
    const anchor = await this.#anchor(f, bucket);
    if (!anchor) return [];
    return listCalls(this.db, f, limit, offset - bucket, anchor);
  }

  async #anchor(f: CallFilter, bucket: number): Promise<CallPosition | undefined> {
    const key = filterKey(f);
    const generation = callsGeneration(f.accountId);
    let set = this.#anchors.get(key);
    if (!set || set.generation !== generation || this.clock.now() - set.at >= this.ttlMs) {
      if (this.#anchors.size >= this.maxEntries) this.#anchors.clear();
      set = { generation, at: this.clock.now(), byOffset: new Map() };
      this.#anchors.set(key, set);
    }
    const known = set.byOffset.get(bucket);
    if (known) return known;
    // Walk from the nearest known anchor below, so building anchor k costs one stride, not k strides.
    let base = 0;
    let from: CallPosition | undefined;
    for (const [o, p] of set.byOffset) if (o < bucket && o > base) [base, from] = [o, p];
    const pos = await callPositionAt(this.db, f, bucket - base, from);
    if (pos) set.byOffset.set(bucket, pos);
    return pos;
  }
}
