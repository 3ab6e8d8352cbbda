import { callsGeneration, countCalls, type CallFilter, type Db } from '../store/index.js';

/**
 * The list envelope's `total` is a count under the filters, which over a million CDRs costs tens of
 * milliseconds per request. Totals are cached per (account, filter) and reused while (a) no call of the account
 * was written through this process since, and (b) the entry is younger than `ttlMs`, which bounds how stale a
 * total can be after writes by other processes (docs/api.md, "total"). Pages themselves are never cached.
 */
export class CallTotals {
  readonly #entries = new Map<string, { total: number; generation: number; at: number }>();
  constructor(
    private readonly db: Db,
    private readonly ttlMs = 5000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  async total(f: CallFilter): Promise<number> {
    const key = JSON.stringify([f.accountId, f.direction, f.status, f.search, f.fromIso, f.toIso]);
    const generation = callsGeneration(f.accountId);
    const hit = this.#entries.get(key);
    const now = this.now();
    if (hit && hit.generation === generation && now - hit.at < this.ttlMs) return hit.total;
    const total = await countCalls(this.db, f);
    if (this.#entries.size >= this.maxEntries) this.#entries.clear();
    this.#entries.set(key, { total, generation, at: now });
    return total;
  }
}
