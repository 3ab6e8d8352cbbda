/**
 * The SIP messages of calls, kept in memory for the console's ladder and `simu trace`: at most `maxMessages` and
 * `maxBytes` of them, none older than `maxAgeMs`; the oldest go first. Found by Call-ID, in the order they passed.
 */
import type { TransportName } from '../stack/index.js';

export interface CapturedMessage {
  /** Order of capture across all calls. */
  seq: number;
  /** Unix epoch milliseconds, with microseconds. */
  at: number;
  direction: 'in' | 'out';
  transport: TransportName;
  srcAddress: string;
  srcPort: number;
  dstAddress: string;
  dstPort: number;
  callId: string;
  startLine: string;
  data: Buffer;
}

export class SipLadder {
  /** Every message kept, oldest first (a queue: head index into the array, compacted now and then). */
  #queue: CapturedMessage[] = [];
  #head = 0;
  #bytes = 0;
  #seq = 0;
  readonly #byCallId = new Map<string, CapturedMessage[]>();

  constructor(private readonly opts: { maxMessages: number; maxBytes: number; maxAgeMs: number }) {}

  add(m: Omit<CapturedMessage, 'seq'>): void {
    if (this.opts.maxMessages <= 0) return;
    const kept: CapturedMessage = { ...m, seq: ++this.#seq };
    this.#queue.push(kept);
    this.#bytes += kept.data.length;
    let list = this.#byCallId.get(kept.callId);
    if (!list) this.#byCallId.set(kept.callId, (list = []));
    list.push(kept);
    this.#evict(kept.at);
  }

  /** The messages of these Call-IDs, in the order they passed. */
  messages(callIds: Iterable<string>, now: number): CapturedMessage[] {
    this.#evict(now);
    const out: CapturedMessage[] = [];
    for (const id of callIds) out.push(...(this.#byCallId.get(id) ?? []));
    return out.sort((a, b) => a.seq - b.seq);
  }

  get size(): number {
    return this.#queue.length - this.#head;
  }

  get bytes(): number {
    return this.#bytes;
  }

  #evict(now: number): void {
    const cutoff = now - this.opts.maxAgeMs;
    while (this.size > 0) {
      const oldest = this.#queue[this.#head]!;
      if (this.size <= this.opts.maxMessages && this.#bytes <= this.opts.maxBytes && oldest.at >= cutoff) break;
      this.#head++;
      this.#bytes -= oldest.data.length;
      const list = this.#byCallId.get(oldest.callId);
      // The oldest message kept is also the oldest of its Call-ID.
      list?.shift();
      if (list?.length === 0) this.#byCallId.delete(oldest.callId);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
