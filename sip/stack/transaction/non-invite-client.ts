/**
 * Non-INVITE client transaction (RFC 3261 §17.1.2).
 */
import type { SipRequest, SipResponse } from '../message/index.js';
import {
  Transaction,
  TransactionState as S,
  type ClientTransactionUser,
  type TransactionContext,
} from './transaction.js';

const NICT_TRANSITIONS = {
  [S.Trying]: [S.Proceeding, S.Completed, S.Terminated],
  [S.Proceeding]: [S.Completed, S.Terminated],
  [S.Completed]: [S.Terminated],
} as const;

export class NonInviteClientTransaction extends Transaction<ClientTransactionUser> {
  protected readonly transitions = NICT_TRANSITIONS;

  constructor(id: string, request: SipRequest, ctx: TransactionContext, user: ClientTransactionUser) {
    super(id, request, S.Trying, ctx, user);
  }

  /** §17.1.2.2: send the request, Timer E (unreliable only) and Timer F. */
  start(): void {
    this.transmit(this.request);
    if (!this.reliable) this.#scheduleE(this.t.E);
    this.startTimer('F', this.t.F, () => {
      if (this.state === S.Trying || this.state === S.Proceeding) {
        this.transition(S.Terminated);
        this.user.onTimeout();
      }
    });
  }

  #scheduleE(interval: number): void {
    this.startTimer('E', interval, () => {
      if (this.state !== S.Trying && this.state !== S.Proceeding) return;
      this.transmit(this.request);
      // §17.1.2.2: doubling up to T2 in Trying; always T2 once Proceeding.
      this.#scheduleE(this.state === S.Proceeding ? this.t.T2 : Math.min(interval * 2, this.t.T2));
    });
  }

  receiveResponse(res: SipResponse): void {
    if (this.state !== S.Trying && this.state !== S.Proceeding) return; // Completed absorbs retransmissions
    if (res.status < 200) {
      this.transition(S.Proceeding);
      this.user.onResponse(res);
      return;
    }
    this.stopTimer('E');
    this.stopTimer('F');
    this.transition(S.Completed);
    if (this.ctx.completed && this.t.K > 0) {
      // Completed only absorbs retransmitted responses until Timer K: the layer keeps that as this transaction's
      // key, and the transaction (its request and the TU's callbacks) ends.
      this.ctx.completed.keep(this.id, this.ctx.clock.now() + this.t.K);
      this.transition(S.Terminated);
    } else {
      this.startTimer('K', this.t.K, () => this.transition(S.Terminated));
    }
    this.user.onResponse(res);
  }
}
