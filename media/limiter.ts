/** Runs at most `limit` async jobs at once, in arrival order. */
export class Limiter {
  #running = 0;
  readonly #queue: Array<() => void> = [];
  constructor(readonly limit: number) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#running += 1;
    try {
      return await job();
    } finally {
      this.#running -= 1;
      this.#queue.shift()?.();
    }
  }
}
