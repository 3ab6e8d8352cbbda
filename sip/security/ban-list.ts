import type { Logger } from '../../config/index.js';
import { makeRoom } from './bounded-map.js';

export type BanReason = 'flood' | 'auth-failures' | 'scanner' | 'operator';

/** A ban as the gate and its store exchange it (times in epoch milliseconds). */
export interface BanRecord {
  address: string;
  reason: string;
  bannedAt: number;
  expiresAt: number;
  hits: number;
}

/**
 * Where bans outlive the process and where the operator's CLI meets the running switch. `knexBanStore(db)` is the
 * real one (table `ip_bans`); tests pass an in-memory one.
 */
export interface BanStore {
  add(ban: BanRecord): Promise<void>;
  /** Bans whose period has not ended at `now`. */
  active(now: number): Promise<BanRecord[]>;
  setHits(address: string, hits: number): Promise<void>;
  /** Deletes rows that ended before `before`. */
  purgeBefore(before: number): Promise<number>;
}

const FLUSH_PER_SYNC = 500;

interface Entry extends BanRecord {
  flushedHits: number;
  /** The store holds this ban (its write resolved); 0 while a write is in flight or failed. */
  persistedGen: number;
}

/**
 * The in-memory ban table: the first and cheapest check of every request (one Map lookup), in the manner of
 * Kamailio's `ipban` htable beside pike. The store is reconciled by `sync()`: hit counts go out, bans lifted by the
 * operator (rows deleted) are dropped here, and bans added elsewhere (CLI, another node) are taken in.
 */
export class BanList {
  readonly #bans = new Map<string, Entry>();
  readonly #store: BanStore | undefined;
  readonly #log: Logger;
  readonly #maxBans: number;
  #gen = 1;
  #writes: Promise<void> = Promise.resolve();
  #syncing: Promise<void> | undefined;
  lifted = 0;
  evicted = 0;

  constructor(opts: { store?: BanStore; log: Logger; maxBans: number }) {
    this.#store = opts.store;
    this.#log = opts.log;
    this.#maxBans = opts.maxBans;
  }

  /** The ban holding `key` at `now`, counting the dropped request; undefined when none (an ended ban is removed). */
  hit(key: string, now: number): BanRecord | undefined {
    const e = this.#bans.get(key);
    if (!e) return undefined;
    if (now >= e.expiresAt) {
      this.#bans.delete(key);
      return undefined;
    }
    e.hits++;
    return e;
  }

  /** Whether `key` is banned at `now`, without counting a hit. */
  get(key: string, now: number): BanRecord | undefined {
    const e = this.#bans.get(key);
    return e && now < e.expiresAt ? e : undefined;
  }

  ban(key: string, reason: BanReason, now: number, seconds: number): BanRecord {
    if (!this.#bans.has(key)) this.evicted += makeRoom(this.#bans, this.#maxBans);
    const e: Entry = {
      address: key,
      reason,
      bannedAt: now,
      expiresAt: now + seconds * 1000,
      hits: 0,
      flushedHits: 0,
      persistedGen: 0,
    };
    this.#bans.set(key, e);
    this.#log.warn({ address: key, reason, seconds }, 'source banned');
    const store = this.#store;
    if (store) {
      const record: BanRecord = { address: key, reason, bannedAt: e.bannedAt, expiresAt: e.expiresAt, hits: 0 };
      this.#writes = this.#writes
        .then(() => store.add(record))
        .then(
          () => {
            // Only if this entry is still the current one (a re-ban replaces it).
            if (this.#bans.get(key) === e) e.persistedGen = this.#gen++;
          },
          (err) => this.#log.error({ err, address: key }, 'ban not persisted; it holds in memory only'),
        );
    }
    return e;
  }

  /** Removes a ban from memory only (the store's row is the CLI's business). */
  forget(key: string): boolean {
    return this.#bans.delete(key);
  }

  /** Removes ended bans; returns how many went. */
  sweep(now: number): number {
    let n = 0;
    for (const [key, e] of this.#bans) {
      if (now >= e.expiresAt) {
        this.#bans.delete(key);
        n++;
      }
    }
    return n;
  }

  list(now: number): BanRecord[] {
    return [...this.#bans.values()]
      .filter((e) => now < e.expiresAt)
      .map(({ address, reason, bannedAt, expiresAt, hits }) => ({ address, reason, bannedAt, expiresAt, hits }));
  }

  get size(): number {
    return this.#bans.size;
  }

  /** Resolves when every ban write queued so far has finished (tests and close()). */
  async flushWrites(): Promise<void> {
    await this.#writes;
  }

  /** Reconciles with the store; concurrent calls share one run. */
  sync(now: number, purgeBefore?: number): Promise<void> {
    if (!this.#store) return Promise.resolve();
    this.#syncing ??= this.#sync(this.#store, now, purgeBefore).finally(() => (this.#syncing = undefined));
    return this.#syncing;
  }

  async #sync(store: BanStore, now: number, purgeBefore: number | undefined): Promise<void> {
    try {
      // At most FLUSH_PER_SYNC rows per run, so a poll stays short during a wide attack; the rest go next time.
      let flushed = 0;
      for (const e of this.#bans.values()) {
        if (flushed >= FLUSH_PER_SYNC) break;
        if (e.persistedGen && e.hits !== e.flushedHits) {
          flushed++;
          const hits = e.hits;
          await store.setHits(e.address, hits);
          e.flushedHits = hits;
        }
      }
      // Writes that resolved before this read began are visible to it; a ban whose write came later is left alone.
      const seenUpTo = this.#gen - 1;
      const rows = await store.active(now);
      const inStore = new Map(rows.map((r) => [r.address, r]));
      for (const [key, e] of this.#bans) {
        if (e.persistedGen && e.persistedGen <= seenUpTo && !inStore.has(key)) {
          this.#bans.delete(key);
          this.lifted++;
          this.#log.warn({ address: key }, 'ban lifted by the operator');
        }
      }
      for (const r of rows) {
        const e = this.#bans.get(r.address);
        if (!e) {
          this.#bans.set(r.address, { ...r, flushedHits: r.hits, persistedGen: this.#gen++ });
        } else if (e.persistedGen && e.expiresAt !== r.expiresAt) {
          e.expiresAt = r.expiresAt;
          e.reason = r.reason;
        }
      }
      if (purgeBefore !== undefined) await store.purgeBefore(purgeBefore);
    } catch (err) {
      this.#log.error({ err }, 'ban table sync failed; keeping the bans in memory');
    }
  }
}
