/**
 * Items handed over within one turn of the event loop, or while the previous batch is being run, are run together by
 * one call of `run`; each caller gets its own item's result. At most one batch runs at a time, in the order handed
 * over, so a batch sees every earlier batch finished. When `run` throws, every item of that batch rejects with it.
 * With `minGapMs`, a batch starts no sooner than that after the previous one started: under a steady stream of items
 * (each arriving in a turn of its own) the batches grow instead of running one item each; when idle, an item still
 * runs in the next turn.
 */
export class TurnBatch<T, R> {
  readonly #run: (items: readonly T[]) => Promise<readonly R[]>;
  readonly #max: number;
  readonly #minGapMs: number;
  #lastStart = -Infinity;
  #waiting: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  #draining: Promise<void> | undefined;

  /** `run` returns one result per item, in the items' order; a batch holds at most `max` items. */
  constructor(run: (items: readonly T[]) => Promise<readonly R[]>, opts: { max?: number; minGapMs?: number } = {}) {
    this.#run = run;
    this.#max = opts.max ?? 500;
    this.#minGapMs = opts.minGapMs ?? 0;
  }

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#draining ??= this.#turn().then(() => this.#drain());
    });
  }

  /** Resolves when every item handed over so far has been run (or its batch failed): for an orderly stop. */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  /** The next turn, or the end of the gap after the last batch's start if that is later. */
  #turn(): Promise<void> {
    const wait = this.#lastStart + this.#minGapMs - performance.now();
    return new Promise<void>((go) => (wait > 1 ? setTimeout(go, wait) : setImmediate(go)));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.length > 0) {
        if (this.#minGapMs > 0 && performance.now() - this.#lastStart < this.#minGapMs) await this.#turn();
        this.#lastStart = performance.now();
        const batch = this.#waiting.splice(0, this.#max);
        try {
          const results = await this.#run(batch.map((w) => w.item));
          batch.forEach((w, i) => w.resolve(results[i]!));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.#draining = undefined;
    }
  }
}
