import { randomFillSync } from 'node:crypto';

/**
 * Event ids are UUIDv7 (RFC 9562 §5.7): 48 bits of Unix milliseconds first, so the text sorts in creation order.
 * The outbox keeps status callbacks of one call in order by comparing these ids, which needs no extra column and
 * still works when two events share a millisecond: the 12-bit `rand_a` field carries a per-process counter
 * (RFC 9562 §6.2, method 1), and when it overflows the timestamp is advanced by one, keeping ids monotonic.
 */
export class EventIdGenerator {
  #lastMs = 0;
  #counter = 0;
  /** Random bytes drawn 4 KiB at a time: one call into the CSPRNG per 256 ids instead of one per id. */
  readonly #pool = Buffer.alloc(4096);
  #poolAt = this.#pool.length;

  constructor(private readonly now: () => number = Date.now) {}

  next(): string {
    let ms = this.now();
    if (ms <= this.#lastMs) {
      ms = this.#lastMs;
      this.#counter++;
      if (this.#counter > 0xfff) {
        ms++;
        this.#counter = 0;
      }
    } else {
      this.#counter = 0;
    }
    this.#lastMs = ms;
    if (this.#poolAt === this.#pool.length) {
      randomFillSync(this.#pool);
      this.#poolAt = 0;
    }
    const b = this.#pool.subarray(this.#poolAt, (this.#poolAt += 16)); // each slot is used once
    b.writeUIntBE(ms, 0, 6);
    b[6] = 0x70 | (this.#counter >> 8); // version 7
    b[7] = this.#counter & 0xff;
    b[8] = 0x80 | (b[8]! & 0x3f); // variant 10
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

export const eventIds = new EventIdGenerator();
