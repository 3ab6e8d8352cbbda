/**
 * A first-in first-out queue over one array: `shift` is O(1) (a head index moves on), a taken slot is cleared at
 * once so that nothing it held stays reachable until the array is compacted, and the array is compacted once more
 * than half of it (and over 1,024 slots) is taken.
 */
export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, left in the queue. */
  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Takes the oldest item out. */
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items.splice(0, this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Empties the queue; returns what it held, oldest first. */
  clear(): T[] {
    const rest = this.#items.slice(this.#head) as T[];
    this.#items = [];
    this.#head = 0;
    return rest;
  }
}
