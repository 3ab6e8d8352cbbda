/**
 * INVITE client transaction (RFC 3261 §17.1.1, with the Accepted state of RFC 6026 §7.2).
 */
import { SipHeaders, SipRequest, type SipResponse } from '../message/index.js';
import {
  Transaction,
  TransactionState as S,
  type ClientTransactionUser,
  type TransactionContext,
} from './transaction.js';

const ICT_TRANSITIONS = {
  [S.Calling]: [S.Proceeding, S.Accepted, S.Completed, S.Terminated],
  [S.Proceeding]: [S.Accepted, S.Completed, S.Terminated],
  [S.Accepted]: [S.Terminated],
  [S.Completed]: [S.Terminated],
} as const;

export class InviteClientTransaction extends Transaction<ClientTransactionUser> {
  protected readonly transitions = ICT_TRANSITIONS;
  #ack?: SipRequest;
  /** When Timer M ends Accepted. */
  #acceptedUntil = 0;

  constructor(id: string, request: SipRequest, ctx: TransactionContext, user: ClientTransactionUser) {
    super(id, request, S.Calling, ctx, user);
  }

  /** §17.1.1.2: send the INVITE, start Timer A (unreliable only) and Timer B. */
  start(): void {
    this.transmit(this.request);
    if (!this.reliable) this.#scheduleA(this.t.A);
    this.startTimer('B', this.t.B, () => {
      if (this.state === S.Calling) {
        this.transition(S.Terminated);
        this.user.onTimeout();
      }
    });
  }

  #scheduleA(interval: number): void {
    this.startTimer('A', interval, () => {
      if (this.state !== S.Calling) return;
      this.transmit(this.request);
      this.#scheduleA(interval * 2); // §17.1.1.2: doubled each time, no cap
    });
  }

  receiveResponse(res: SipResponse): void {
    const status = res.status;
    switch (this.state) {
      case S.Calling:
      case S.Proceeding:
        this.stopTimer('A');
        if (status < 200) {
          // §17.1.1.2: a provisional response moves Calling to Proceeding and is passed up; Timer B only
          // guards Calling, so a ringing call waits until answered or canceled by the TU.
          this.stopTimer('B');
          this.transition(S.Proceeding);
          this.user.onResponse(res);
        } else if (status < 300) {
          // RFC 6026 §7.2: a 2xx moves to Accepted; later 2xx retransmissions are passed up too (Timer M).
          this.stopTimer('B');
          this.transition(S.Accepted);
          this.#acceptedUntil = this.ctx.clock.now() + this.t.M;
          this.startTimer('M', this.t.M, () => this.transition(S.Terminated));
          this.user.onResponse(res);
        } else {
          // §17.1.1.2: a final non-2xx gets an ACK built by the transaction, then Completed and Timer D.
          this.stopTimer('B');
          this.transition(S.Completed);
          this.#ack = buildNon2xxAck(this.request, res);
          this.transmit(this.#ack);
          this.startTimer('D', this.t.D, () => this.transition(S.Terminated));
          this.user.onResponse(res);
        }
        break;
      case S.Accepted:
        if (status >= 200 && status < 300) this.user.onResponse(res);
        break;
      case S.Completed:
        // §17.1.1.2: a retransmitted final response is answered with the same ACK, not passed up.
        if (status >= 300 && this.#ack) this.transmit(this.#ack);
        break;
      default:
        break;
    }
  }

  /**
   * The TU has sent the ACK of the 2xx: from here until Timer M every retransmitted 2xx only needs `resendAck`. The
   * layer keeps that by this transaction's key, and the transaction (its request, the TU's callbacks) ends.
   * Without a keeper the transaction stays and passes each retransmitted 2xx up as before.
   */
  acknowledged(resendAck: (res: SipResponse) => void): boolean {
    if (this.state !== S.Accepted || !this.ctx.completed) return false;
    this.transition(S.Terminated);
    this.ctx.completed.keep(this.id, this.#acceptedUntil, resendAck);
    return true;
  }
}

/**
 * A request that shares the INVITE's transaction identity: its Request-URI, top Via (same branch), Route,
 * From, Call-ID and CSeq number, with `method` and the given To. Both the ACK of a non-2xx (§17.1.1.3, To of
 * the response) and CANCEL (§9.1, To of the INVITE) are built this way.
 */
export function requestFromInvite(invite: SipRequest, method: 'ACK' | 'CANCEL', to: string): SipRequest {
  const h = new SipHeaders();
  h.append('via', invite.headers.get('via') ?? '');
  for (const r of invite.headers.getAll('route')) h.append('route', r);
  h.append('max-forwards', '70');
  h.append('from', invite.headers.get('from') ?? '');
  h.append('to', to);
  h.append('call-id', invite.callId);
  h.append('cseq', `${invite.cseq.seq} ${method}`);
  return new SipRequest(method, invite.uri, h);
}

/** §17.1.1.3: the ACK for a non-2xx carries the To of the response (with its tag). */
export function buildNon2xxAck(invite: SipRequest, res: SipResponse): SipRequest {
  return requestFromInvite(invite, 'ACK', res.headers.get('to') ?? '');
}
