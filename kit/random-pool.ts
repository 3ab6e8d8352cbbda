import { randomFillSync } from 'node:crypto';

/**
 * Random bytes drawn from the CSPRNG a block at a time, for ids made per message or per row (SIP Call-IDs, row ids,
 * call sids): one call into the CSPRNG per block instead of one per id, whose cost showed in every call's CPU.
 * Every byte is handed out once.
 */
export class RandomPool {
  readonly #block: Buffer;
  #at: number;

  constructor(blockBytes = 4096) {
    this.#block = Buffer.alloc(blockBytes);
    this.#at = blockBytes;
  }

  /**
   * `n` fresh random bytes (n at most the block's size), as a view into the block: valid until the block is drawn
   * again, so use it (or copy it) at once.
   */
  take(n: number): Buffer {
    if (n > this.#block.length)
      throw new RangeError(`RandomPool: ${n} bytes asked of a ${this.#block.length}-byte block`);
    if (this.#at + n > this.#block.length) {
      randomFillSync(this.#block);
      this.#at = 0;
    }
    return this.#block.subarray(this.#at, (this.#at += n));
  }

  /** `n` fresh random bytes as 2n hex characters. */
  hex(n: number): string {
    const b = this.take(n);
    return b.toString('hex');
  }
}
