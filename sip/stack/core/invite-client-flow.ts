/**
 * One INVITE attempt of a UAC (RFC 3261 §13.2): provisional responses passed to the caller, CANCEL when the
 * caller aborts (§9.1: only once a provisional response has arrived), the ACK for a 2xx and again for each
 * retransmitted 2xx (§13.2.2.4).
 */
import type { Clock } from '../clock.js';
import { CancelReason, SipCanceledError, SipTimeoutError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { SipRequest, SipResponse } from '../message/index.js';
import { requestFromInvite, type TimerSettings, type TransactionLayer } from '../transaction/index.js';
import type { Target, TransportLayer } from '../transport/index.js';
import type { Dialog } from '../dialog/dialog.js';

export interface InviteFlowOptions {
  onProvisional?: (res: SipResponse) => void;
  /** RFC 3262: a reliable provisional (Require: 100rel, RSeq) arrived for the first time: PRACK it. */
  onReliable?: (res: SipResponse, rseq: number) => void;
  onTrying?: () => void;
  signal?: AbortSignal;
}

export class InviteClient {
  /** The caller asked to cancel. */
  canceled = false;
  #provisional = false;
  #cancelSent = false;
  #settled = false;
  /** The caller's callbacks, dropped once the INVITE is settled (see settle in run). */
  #opts: InviteFlowOptions;
  #reject?: (e: Error) => void;
  /** The highest RSeq PRACKed (RFC 3262 §4: retransmissions and older ones are not PRACKed again). */
  #rseq = -1;

  constructor(
    private readonly layer: TransactionLayer,
    private readonly transport: TransportLayer,
    private readonly timers: TimerSettings,
    private readonly clock: Clock,
    private readonly invite: SipRequest,
    private readonly target: Target,
    opts: InviteFlowOptions,
    private readonly logger: Logger,
  ) {
    this.#opts = opts;
  }

  /** Sends the INVITE and resolves with its first final response. */
  run(): Promise<SipResponse> {
    const signal = this.#opts.signal;
    if (signal?.aborted) {
      this.canceled = true;
      return Promise.reject(new SipCanceledError());
    }
    return new Promise<SipResponse>((resolve, reject) => {
      this.#reject = reject;
      const onAbort = () => {
        this.canceled = true;
        if (this.#provisional) this.#sendCancel();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = () => {
        this.#settled = true;
        signal?.removeEventListener('abort', onAbort);
        // The transaction keeps this flow up to 32 s more (Timer M, RFC 6026) for retransmitted 2xx: the caller's
        // callbacks, and what they close over (the call), need not stay that long.
        this.#opts = {};
      };
      this.layer.sendRequest(this.invite, this.transport.channelTo(this.target), {
        onResponse: (res) => {
          if (res.status < 200) {
            this.#provisional = true;
            if (this.canceled) this.#sendCancel();
            if (res.status > 100) this.#reliable(res);
            if (res.status > 100) this.#opts.onProvisional?.(res);
            else this.#opts.onTrying?.();
            return;
          }
          // Settled: a 2xx again before acknowledge() sent the ACK, which the layer then sends to each one after.
          if (this.#settled) return;
          settle();
          resolve(res);
        },
        onTimeout: () => {
          settle();
          reject(new SipTimeoutError('INVITE timed out'));
        },
        onTransportError: (e) => {
          settle();
          reject(e);
        },
      });
    });
  }

  #reliable(res: SipResponse): void {
    const rseq = /^\s*(\d{1,10})\s*$/.exec(res.headers.get('rseq') ?? '')?.[1];
    const required = res.headers
      .getAll('require')
      .flatMap((v) => v.split(','))
      .some((t) => t.trim().toLowerCase() === '100rel');
    if (!required || rseq === undefined || Number(rseq) <= this.#rseq) return;
    this.#rseq = Number(rseq);
    this.#opts.onReliable?.(res, Number(rseq));
  }

  /**
   * Sends the ACK for the 2xx that `run` resolved with; the transaction layer sends it again to each retransmitted 2xx
   * until Timer M (the transaction hands that over, and this flow is let go). A 2xx with another To tag meanwhile is
   * another fork's (a proxy downstream forked the INVITE, §13.2.2.4): `otherFork` acknowledges and ends it, once per
   * fork, and returns what sends that fork its ACK again for its own retransmissions.
   */
  acknowledge(dialog: Dialog, otherFork?: (res: SipResponse) => () => void): void {
    const resend = dialog.ackResender(dialog.acknowledge(this.invite.cseq.seq));
    const tag = dialog.remoteTag;
    /** The other forks' ACK resends, by To tag; none in the usual case. */
    let forks: Map<string, () => void> | undefined;
    this.layer.acknowledged(this.invite, (res) => {
      const other = res.toTag;
      if (other === undefined || other === tag || otherFork === undefined) return resend();
      forks ??= new Map();
      const again = forks.get(other);
      if (again) return again();
      forks.set(other, otherFork(res));
    });
  }

  /**
   * §9.1: the CANCEL copies the INVITE's Request-URI, Call-ID, From, To, CSeq number, top Via (same branch)
   * and Route. If no final response follows within 64*T1 the INVITE is given up.
   */
  #sendCancel(): void {
    if (this.#cancelSent) return;
    this.#cancelSent = true;
    const inv = this.invite;
    const cancel = requestFromInvite(inv, 'CANCEL', inv.headers.get('to') ?? '');
    // RFC 3326: why it is cancelled (another fork answered), when the canceller said.
    const why: unknown = this.#opts.signal?.reason;
    if (why instanceof CancelReason) cancel.headers.set('reason', why.header);
    this.layer.sendRequest(cancel, this.transport.channelTo(this.target), {
      onResponse: () => {},
      onTimeout: () => this.logger.debug({ callId: inv.callId }, 'CANCEL timed out'),
      onTransportError: () => {},
    });
    this.clock.setTimeout(() => {
      if (!this.#settled) {
        this.#settled = true;
        this.#reject?.(new SipCanceledError());
      }
    }, 64 * this.timers.T1);
  }
}
