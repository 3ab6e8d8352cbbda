/**
 * A map holding at most `max` entries with O(1) eviction, for counters keyed by attacker-chosen values (a flood
 * from spoofed random sources creates a new key per packet). Entries live in two generations: new and touched keys
 * go to the young one; when it is half full, the old generation is dropped whole and the young one becomes old.
 * So a key touched within the last max/2 insertions is always kept, and no insertion ever walks the table.
 * (Deleting the oldest entries one by one from a single Map is slow under such a flood: V8 leaves deleted slots at
 * the front of the table, and every fresh iterator walks over them.)
 */
export class GenerationalMap<V> {
  #young = new Map<string, V>();
  #old = new Map<string, V>();
  #evicted = 0;
  readonly #half: number;

  constructor(max: number) {
    this.#half = Math.max(1, Math.floor(max / 2));
  }

  get(key: string): V | undefined {
    const v = this.#young.get(key);
    if (v !== undefined) return v;
    const o = this.#old.get(key);
    if (o !== undefined) {
      this.#old.delete(key);
      this.#insert(key, o);
    }
    return o;
  }

  set(key: string, value: V): void {
    if (this.#young.has(key)) {
      this.#young.set(key, value);
      return;
    }
    this.#old.delete(key);
    this.#insert(key, value);
  }

  delete(key: string): boolean {
    return this.#young.delete(key) || this.#old.delete(key);
  }

  /** Deletes every entry for which `stale` is true; returns how many went. */
  deleteWhere(stale: (value: V) => boolean): number {
    let n = 0;
    for (const m of [this.#young, this.#old]) {
      for (const [k, v] of m) {
        if (stale(v)) {
          m.delete(k);
          n++;
        }
      }
    }
    return n;
  }

  *entries(): IterableIterator<[string, V]> {
    yield* this.#young;
    yield* this.#old;
  }

  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** Entries dropped to stay within the bound. */
  get evicted(): number {
    return this.#evicted;
  }

  #insert(key: string, value: V): void {
    if (this.#young.size >= this.#half) {
      this.#evicted += this.#old.size;
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(key, value);
  }
}

/**
 * Makes room in a full Map by deleting its oldest entries (insertion order), a sixteenth of `max` at once, for the
 * small tables (bans, lockouts) whose keys an attacker cannot mint by the packet. Returns how many went.
 */
export function makeRoom<K, V>(map: Map<K, V>, max: number): number {
  if (map.size < max) return 0;
  const target = map.size - max + Math.max(1, Math.floor(max / 16));
  let removed = 0;
  for (const key of map.keys()) {
    if (removed >= target) break;
    map.delete(key);
    removed++;
  }
  return removed;
}
