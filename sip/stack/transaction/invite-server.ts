/**
 * INVITE server transaction (RFC 3261 §17.2.1, with the Accepted state of RFC 6026 §7.1). The 2xx is
 * retransmitted here until its ACK arrives (§13.3.1.4 assigns that to the UAS core; keeping it with the
 * transaction keeps every timer in one kind of object).
 */
import { createResponse, type SipRequest, type SipResponse } from '../message/index.js';
import {
  Transaction,
  TransactionState as S,
  type ServerTransactionUser,
  type TransactionContext,
} from './transaction.js';

/** §17.2.1: send 100 Trying unless the TU answers within 200 ms. */
const TRYING_DELAY_MS = 200;

const IST_TRANSITIONS = {
  [S.Proceeding]: [S.Accepted, S.Completed, S.Terminated],
  [S.Accepted]: [S.Terminated],
  [S.Completed]: [S.Confirmed, S.Terminated],
  [S.Confirmed]: [S.Terminated],
} as const;

export class InviteServerTransaction extends Transaction<ServerTransactionUser> {
  protected readonly transitions = IST_TRANSITIONS;
  #lastResponse?: SipResponse;

  constructor(id: string, request: SipRequest, ctx: TransactionContext, user: ServerTransactionUser) {
    super(id, request, S.Proceeding, ctx, user);
    this.startTimer('Trying', TRYING_DELAY_MS, () => {
      if (this.state === S.Proceeding && !this.#lastResponse) this.respond(createResponse(request, 100));
    });
  }

  get lastResponse(): SipResponse | undefined {
    return this.#lastResponse;
  }

  /** The TU's response. */
  respond(res: SipResponse): void {
    if (this.state !== S.Proceeding) return; // §17.2.1: only Proceeding accepts responses from the TU
    this.#lastResponse = res;
    this.stopTimer('Trying');
    this.transmit(res);
    if (res.status < 200) return;
    if (res.status < 300) {
      // RFC 6026 §7.1: Accepted; the 2xx is retransmitted T1, 2T1 ... up to T2 until ACK or Timer L.
      this.transition(S.Accepted);
      this.#acceptedUntil = this.ctx.clock.now() + this.t.L;
      this.#schedule2xx(this.t.T1);
      this.startTimer('L', this.t.L, () => {
        const unacked = this.#awaitingAck;
        this.transition(S.Terminated);
        if (unacked) this.user.onAckTimeout?.();
      });
      return;
    }
    // §17.2.1: non-2xx final: Completed, Timer G (unreliable) and Timer H.
    this.transition(S.Completed);
    if (!this.reliable) this.#scheduleG(this.t.G);
    this.startTimer('H', this.t.H, () => {
      this.transition(S.Terminated);
      this.user.onAckTimeout?.();
    });
  }

  #awaitingAck = true;
  /** When Timer L ends Accepted. */
  #acceptedUntil = 0;

  #schedule2xx(interval: number): void {
    this.startTimer('2xx', interval, () => {
      if (this.state !== S.Accepted || !this.#awaitingAck) return;
      this.transmit(this.#lastResponse!);
      this.#schedule2xx(Math.min(interval * 2, this.t.T2));
    });
  }

  #scheduleG(interval: number): void {
    this.startTimer('G', interval, () => {
      if (this.state !== S.Completed) return;
      this.transmit(this.#lastResponse!);
      this.#scheduleG(Math.min(interval * 2, this.t.T2));
    });
  }

  /** A retransmitted INVITE (§17.2.1): answered with the last response sent, never passed up. */
  receiveRetransmission(): void {
    if ((this.state === S.Proceeding || this.state === S.Completed) && this.#lastResponse) {
      this.transmit(this.#lastResponse);
    }
  }

  /** The ACK for our non-2xx (same branch): Confirmed, then Timer I absorbs ACK retransmissions. */
  receiveAck(): void {
    if (this.state !== S.Completed) return;
    this.stopTimer('G');
    this.stopTimer('H');
    this.transition(S.Confirmed);
    this.startTimer('I', this.t.I, () => this.transition(S.Terminated));
    this.#quiet();
  }

  /**
   * The ACK for our 2xx (a new transaction, matched by dialog): stop retransmitting the 2xx. What is left of
   * Accepted, absorbing retransmitted INVITEs until Timer L, is kept by the layer as this transaction's key alone;
   * the transaction ends (a CANCEL now finds no INVITE: 481, as RFC 3261 §9.2 answers once it is gone).
   */
  receive2xxAck(): void {
    this.#awaitingAck = false;
    this.stopTimer('2xx');
    if (this.state === S.Accepted && this.ctx.completed) {
      this.transition(S.Terminated);
      this.ctx.completed.keep(this.id, this.#acceptedUntil);
      return;
    }
    this.#quiet();
  }

  /** From here on the transaction only absorbs retransmissions until its timer ends it. */
  #quiet(): void {
    this.request.dropParsedViews();
    this.#lastResponse?.dropParsedViews();
  }

  get awaitingAck(): boolean {
    return this.state === S.Accepted && this.#awaitingAck;
  }
}
