/**
 * Transactions that only wait out a timer, kept as a key and what a retransmission gets.
 *
 * Non-INVITE server transactions over an unreliable transport after their final response (RFC 3261 §17.2.2,
 * Completed): for Timer J (64*T1) every retransmission of the request is answered with that response again, and
 * nothing else happens. The transaction layer keeps that state here as the response's bytes and its channel alone,
 * and the transaction itself ends at once: a busy registrar has Timer J's 32 s of REGISTERs in Completed, and
 * holding each as its objects (transaction, request, response, responder, timer) grows a heap that every scavenge
 * promotes and every mark-compact walks. Timer J is the same for all of them, so they expire in the order they came: one timer, for the oldest,
 * forgetting those past J a second at a time.
 *
 * INVITE transactions in Accepted (RFC 6026 §7) once the 2xx is acknowledged are kept the same way until Timer L or
 * M (also 64*T1): the server's as its key alone (a retransmitted INVITE is absorbed), the client's as its key and
 * the ACK to send again for each retransmitted 2xx (`keep`), rather than each call's two legs holding both
 * transactions 32 s with their parsed requests, responses, responders and flows.
 */
import { detached, Fifo } from '../../../kit/index.js';
import type { Clock, TimerHandle } from '../clock.js';
import { SipTransportError } from '../errors.js';
import { FrozenMessage, type SipMessage, type SipResponse } from '../message/index.js';
import type { CompletedKeeper, MessageChannel } from './transaction.js';

/** How often kept responses past J are forgotten, at most. */
const EXPIRY_STEP_MS = 1000;

/** One transaction's response, sent again as it was (a channel sends `toBuffer()`). */
class Kept extends FrozenMessage {
  constructor(
    readonly key: string,
    bytes: Buffer,
    readonly channel: MessageChannel,
    readonly until: number,
  ) {
    super(bytes);
  }
}

/** A transaction kept by its key alone: `answer` (if any) runs for each retransmission until `until`. */
interface Lingering {
  readonly key: string;
  readonly until: number;
  readonly answer?: (res: SipResponse) => void;
}

export class CompletedResponses implements CompletedKeeper {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #onError: (error: SipTransportError) => void;
  readonly #byKey = new Map<string, Kept | Lingering>();
  /** In the order they expire (near enough: `keep` entries may end a few ms before one ahead of them). */
  readonly #queue = new Fifo<Kept | Lingering>();
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
    this.#add(kept);
    this.#send(kept);
  }

  /** Keeps transaction `key` until `until`: each retransmission runs `answer`, or is absorbed without one. */
  keep(key: string, until: number, answer?: (res: SipResponse) => void): void {
    if (until <= this.#clock.now()) return;
    this.#add({ key: detached(key), until, answer });
  }

  /**
   * Answers a retransmission of a kept transaction: a request again (no `response`) with its response again, a
   * response again (a client transaction's 2xx) with what `keep` was given, or absorbs it when `answer` is false.
   * False when none is kept under `key` (or its time has passed).
   */
  resend(key: string, answer = true, response?: SipResponse): boolean {
    const kept = this.#byKey.get(key);
    if (!kept || kept.until <= this.#clock.now()) return false;
    if (!answer) return true;
    if (kept instanceof Kept) this.#send(kept);
    else if (response) kept.answer?.(response);
    return true;
  }

  /** Forgets everything (the layer is closing). */
  clear(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#byKey.clear();
    this.#queue.clear();
  }

  #add(kept: Kept | Lingering): void {
    this.#byKey.set(kept.key, kept);
    this.#queue.push(kept);
    this.#timer ??= this.#clock.setTimeout(() => this.#expire(), Math.max(0, kept.until - this.#clock.now()));
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
    // the queue later, they would be seconds of answers that each mark-compact walked.
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
