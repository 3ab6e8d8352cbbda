/**
 * Non-INVITE server transactions over an unreliable transport after their final response (RFC 3261 §17.2.2,
 * Completed): for Timer J (64*T1) every retransmission of the request is answered with that response again, and
 * nothing else happens. The transaction layer keeps that state here as the response's bytes and its channel alone,
 * and the transaction itself ends at once: a registrar answering 2,000 REGISTER/s has 4,000 transactions a second
 * in Completed, 128,000 at a time, and holding each as its objects (transaction, request, response, responder,
 * timer) grew the heap by hundreds of MB that every scavenge promoted and every mark-compact walked (pauses of
 * 20-65 ms). Timer J is the same for all of them, so they expire in the order they came: one timer, for the oldest,
 * forgetting those past J a second at a time.
 */
import { detached, Fifo } from '../../../kit/index.js';
import type { Clock, TimerHandle } from '../clock.js';
import { SipTransportError } from '../errors.js';
import type { SipMessage } from '../message/index.js';
import type { CompletedKeeper, MessageChannel } from './transaction.js';

/** How often kept responses past J are forgotten, at most. */
const EXPIRY_STEP_MS = 1000;

/**
 * One transaction's response; it is its own message to send (what a channel sends is `toBuffer()`). The bytes are
 * held as a one-byte string (latin1 maps each byte to one character and back): one object for the collector to
 * walk instead of a Buffer and its share of a pool slab.
 */
class Kept {
  readonly #bytes: string;

  constructor(
    readonly key: string,
    bytes: Buffer,
    readonly channel: MessageChannel,
    readonly until: number,
  ) {
    this.#bytes = bytes.toString('latin1');
  }

  toBuffer(): Buffer {
    return Buffer.from(this.#bytes, 'latin1');
  }
}

export class CompletedResponses implements CompletedKeeper {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #onError: (error: SipTransportError) => void;
  readonly #byKey = new Map<string, Kept>();
  /** In the order they expire. */
  readonly #queue = new Fifo<Kept>();
  #timer?: TimerHandle;

  /** `ttlMs` is Timer J; `onError` hears a response that could not be sent (the entry is dropped). */
  constructor(clock: Clock, ttlMs: number, onError: (error: SipTransportError) => void) {
    this.#clock = clock;
    this.#ttlMs = ttlMs;
    this.#onError = onError;
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** Sends the final response `bytes` of transaction `key` and answers its retransmissions with them until J. */
  add(key: string, bytes: Buffer, channel: MessageChannel): void {
    // The key is cut from the request (its branch): a copy, or each would keep the request's text alive for J.
    const kept = new Kept(detached(key), bytes, channel, this.#clock.now() + this.#ttlMs);
    this.#byKey.set(kept.key, kept);
    this.#queue.push(kept);
    this.#send(kept);
    this.#timer ??= this.#clock.setTimeout(() => this.#expire(), this.#ttlMs);
  }

  /** Answers a retransmitted request of a kept transaction; false when none is kept under `key` (or J has passed). */
  resend(key: string): boolean {
    const kept = this.#byKey.get(key);
    if (!kept || kept.until <= this.#clock.now()) return false;
    this.#send(kept);
    return true;
  }

  /** Forgets everything (the layer is closing). */
  clear(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#byKey.clear();
    this.#queue.clear();
  }

  #send(kept: Kept): void {
    kept.channel.send(kept as unknown as SipMessage).catch((err: unknown) => {
      if (this.#byKey.get(kept.key) === kept) this.#byKey.delete(kept.key);
      this.#onError(err instanceof SipTransportError ? err : new SipTransportError(String(err), { cause: err }));
    });
  }

  #expire(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    // Each is let go of at once (the queue clears its slot): kept until the array was next compacted, up to half
    // the queue later, they were 16 s of answers at 2,000 REGISTER/s (~64,000) that each mark-compact walked.
    while ((this.#queue.peek()?.until ?? Infinity) <= now) {
      const kept = this.#queue.shift()!;
      if (this.#byKey.get(kept.key) === kept) this.#byKey.delete(kept.key);
    }
    // Forgotten a second at a time (resend() checks J itself): at 4,000 a second, one timer per entry was as many
    // timers a second as there were answers.
    const next = this.#queue.peek();
    if (next) this.#timer = this.#clock.setTimeout(() => this.#expire(), Math.max(EXPIRY_STEP_MS, next.until - now));
  }
}
