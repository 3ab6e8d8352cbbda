/**
 * Non-INVITE server transaction (RFC 3261 §17.2.2).
 */
import type { SipRequest, SipResponse } from '../message/index.js';
import {
  Transaction,
  TransactionState as S,
  type ServerTransactionUser,
  type TransactionContext,
} from './transaction.js';

const NIST_TRANSITIONS = {
  [S.Trying]: [S.Proceeding, S.Completed, S.Terminated],
  [S.Proceeding]: [S.Completed, S.Terminated],
  [S.Completed]: [S.Terminated],
} as const;

export class NonInviteServerTransaction extends Transaction<ServerTransactionUser> {
  protected readonly transitions = NIST_TRANSITIONS;
  #lastResponse?: SipResponse;

  constructor(id: string, request: SipRequest, ctx: TransactionContext, user: ServerTransactionUser) {
    super(id, request, S.Trying, ctx, user);
  }

  get lastResponse(): SipResponse | undefined {
    return this.#lastResponse;
  }

  respond(res: SipResponse): void {
    if (this.state !== S.Trying && this.state !== S.Proceeding) return;
    this.#lastResponse = res;
    if (res.status >= 200 && !this.reliable && this.ctx.completed) {
      // §17.2.2 Completed, kept by the layer as the response's bytes until Timer J (completed-responses.ts), which
      // sends them now and to every retransmission: this transaction, its request and response end here.
      this.ctx.completed.add(this.id, res.toBuffer(), this.ctx.channel);
      this.transition(S.Completed);
      this.transition(S.Terminated);
      return;
    }
    this.transmit(res);
    if (res.status < 200) {
      this.transition(S.Proceeding);
      return;
    }
    // §17.2.2: Completed; Timer J absorbs request retransmissions (0 over reliable transports).
    this.transition(S.Completed);
    this.startTimer('J', this.t.J, () => this.transition(S.Terminated));
    // Completed only answers retransmissions with the same bytes: drop the parsed views it no longer needs.
    this.request.dropParsedViews();
    res.dropParsedViews();
  }

  /** §17.2.2: a retransmission is absorbed in Trying and answered with the last response afterwards. */
  receiveRetransmission(): void {
    if (this.#lastResponse && (this.state === S.Proceeding || this.state === S.Completed)) {
      this.transmit(this.#lastResponse);
    }
  }
}
