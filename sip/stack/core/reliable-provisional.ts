/**
 * RFC 3262 reliable provisional responses, UAS side: when an INVITE requires `100rel`, each 18x goes out with
 * `Require: 100rel` and an `RSeq`, and is retransmitted (T1, doubling, for 64*T1) until the caller's PRACK names it
 * in `RAck`; a second 18x waits for the first to be acknowledged (§3: one unacknowledged reliable provisional at a
 * time), and is dropped if another is still unacknowledged. The final response stops the retransmissions.
 */
import type { Clock, TimerHandle } from '../clock.js';
import type { SipRequest, SipResponse } from '../message/index.js';

export interface ReliableHost {
  clock: Clock;
  t1: number;
  /** Sends (or resends) the provisional through the INVITE's server transaction. */
  resend(res: SipResponse): void;
  /** The provisional is waiting for a PRACK: the user agent routes PRACKs for this early dialog here. */
  waiting(on: boolean): void;
}

/** Whether an INVITE requires reliable provisionals (its Require lists 100rel). */
export function requires100rel(req: SipRequest): boolean {
  return req.headers
    .getAll('require')
    .flatMap((v) => v.split(','))
    .some((t) => t.trim().toLowerCase() === '100rel');
}

export class ReliableProvisionals {
  /** RFC 3262 §3: the first RSeq is random between 1 and 2^31 - 1. */
  #rseq = 1 + Math.floor(Math.random() * 0x7ffffff0);
  #pending?: { res: SipResponse; rseq: number; timer?: TimerHandle; waitedMs: number; intervalMs: number };

  constructor(
    private readonly invite: SipRequest,
    private readonly host: ReliableHost,
  ) {}

  /**
   * Headers that make this provisional reliable, or null when it must not be sent now (another is still
   * unacknowledged). Call sent() with the built response afterwards.
   */
  prepare(): Record<string, string> | null {
    if (this.#pending) return null;
    return { Require: '100rel', RSeq: String(this.#rseq) };
  }

  /** The reliable provisional went out: retransmit it until PRACK (or 64*T1, or the final response). */
  sent(res: SipResponse): void {
    this.#pending = { res, rseq: this.#rseq, waitedMs: 0, intervalMs: this.host.t1 };
    this.#rseq += 1;
    this.host.waiting(true);
    this.#arm();
  }

  #arm(): void {
    const p = this.#pending;
    if (!p) return;
    p.timer = this.host.clock.setTimeout(() => {
      if (this.#pending !== p) return;
      p.waitedMs += p.intervalMs;
      if (p.waitedMs >= 64 * this.host.t1) return this.stop(); // §3: no PRACK; the final response decides
      this.host.resend(p.res);
      p.intervalMs *= 2;
      this.#arm();
    }, p.intervalMs);
  }

  /** A PRACK arrived: 200 when its RAck names the pending provisional (RSeq, CSeq number, INVITE), else 481. */
  prack(req: SipRequest): number {
    const p = this.#pending;
    const m = /^\s*(\d{1,10})\s+(\d{1,10})\s+INVITE\s*$/i.exec(req.headers.get('rack') ?? '');
    if (!p || !m || Number(m[1]) !== p.rseq || Number(m[2]) !== this.invite.cseq.seq) return 481;
    this.stop();
    return 200;
  }

  /** Stops retransmitting (PRACK heard, final response sent, or given up). */
  stop(): void {
    if (this.#pending?.timer) this.host.clock.clearTimeout(this.#pending.timer);
    if (this.#pending) this.host.waiting(false);
    this.#pending = undefined;
  }
}
