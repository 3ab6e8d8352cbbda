import { randomBytes, createHash } from 'node:crypto';
import { RandomPool } from '../kit/index.js';

/**
 * UUIDv7 (RFC 9562 §5.7): 48 bits of Unix milliseconds first, so the text sorts in creation order. Ids made within
 * one millisecond still sort in the order made: the 12-bit `rand_a` field carries a per-process counter (RFC 9562
 * §6.2, method 1), and when it overflows the timestamp is advanced by one. The other 62 bits are random.
 *
 * Rows keyed by such ids are appended to their indexes instead of landing on a random page: a random key dirtied
 * one more page of every index holding it in each commit (store/calls.ts, docs/architecture.md "The SQLite store
 * inside the switch"). The event outbox keeps one call's callbacks in order by comparing these ids.
 */
export class Uuid7Generator {
  #lastMs = 0;
  #counter = 0;
  /** Random bytes drawn 4 KiB at a time: one call into the CSPRNG per 256 ids instead of one per id. */
  readonly #random = new RandomPool(4096);

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
    const b = this.#random.take(16); // written in place: each slot is used once
    b.writeUIntBE(ms, 0, 6);
    b[6] = 0x70 | (this.#counter >> 8); // version 7
    b[7] = this.#counter & 0xff;
    b[8] = 0x80 | (b[8]! & 0x3f); // variant 10
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

const ids = new Uuid7Generator();

/** A row id: a UUIDv7, time-ordered (see Uuid7Generator). Not a secret: secrets are randomToken's. */
export const newId = (): string => ids.next();
export const nowIso = (d: Date = new Date()): string => d.toISOString();
export const sha256Hex = (s: string): string => createHash('sha256').update(s).digest('hex');
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/**
 * Call sids: `call_` plus 24 hex characters, the first 8 the Unix second it was made (so new sids append to the sid
 * index, within the last second's few pages), the other 16 random (64 bits: one call's sid tells nothing of
 * another's). `now` is for tests.
 */
export const newCallSid = (now: number = Date.now()): string =>
  `call_${Math.floor(now / 1000)
    .toString(16)
    .padStart(8, '0')
    .slice(-8)}${sidRandom()}`;

/** The random half of sids, drawn from a pooled block: one CSPRNG call per 4,096 bytes, not one per sid. */
const sidPool = new RandomPool(4096);
const sidRandom = (): string => sidPool.hex(8);
