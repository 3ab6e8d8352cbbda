import { GenerationalMap } from './bounded-map.js';

/**
 * Counts events per key in a sliding window: "more than `limit` events within `windowMs`" is decided exactly, as
 * Kamailio's pike decides "too many requests per sampling unit" per source, but without pike's two-slot
 * approximation. Each key keeps the times of its last `limit` events in a ring; when the ring is full and its
 * oldest entry is still inside the window, the new event is the (limit+1)-th and the key is over.
 *
 * Memory is bounded twice: at most `maxKeys` keys (GenerationalMap: the least recently touched go first, so a
 * flood from spoofed random sources cannot grow the table), and `sweep()` forgets keys idle longer than the window.
 */
export interface RateWindowOptions {
  limit: number;
  windowMs: number;
  maxKeys: number;
}

interface Track {
  times: number[];
  /** Index of the oldest entry once the ring is full. */
  next: number;
  last: number;
}

export class RateWindows {
  readonly #tracks: GenerationalMap<Track>;

  constructor(readonly opts: RateWindowOptions) {
    this.#tracks = new GenerationalMap(opts.maxKeys);
  }

  /** Records one event; true when the key has now passed `limit` events inside the window. */
  hit(key: string, now: number): boolean {
    let t = this.#tracks.get(key);
    if (!t) {
      t = { times: [], next: 0, last: now };
      this.#tracks.set(key, t);
    }
    t.last = now;
    const { limit, windowMs } = this.opts;
    if (t.times.length < limit) {
      t.times.push(now);
      return false;
    }
    const oldest = t.times[t.next];
    t.times[t.next] = now;
    t.next = (t.next + 1) % limit;
    return now - oldest < windowMs;
  }

  /** Events of the key inside the window ending now. */
  count(key: string, now: number): number {
    const t = this.#tracks.get(key);
    if (!t) return 0;
    let n = 0;
    for (const at of t.times) if (now - at < this.opts.windowMs) n++;
    return n;
  }

  forget(key: string): void {
    this.#tracks.delete(key);
  }

  /** Drops keys with no event inside the window; returns how many went. */
  sweep(now: number): number {
    return this.#tracks.deleteWhere((t) => now - t.last >= this.opts.windowMs);
  }

  get size(): number {
    return this.#tracks.size;
  }

  /** Keys pushed out because the map was full (a sign of a spoofed-source flood). */
  get evicted(): number {
    return this.#tracks.evicted;
  }
}
