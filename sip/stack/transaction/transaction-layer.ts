/**
 * The transaction layer: matches incoming messages to transactions (RFC 3261 §17.1.3, §17.2.3, with RFC 2543
 * matching for branches without the magic cookie), creates server transactions for new requests, absorbs
 * retransmissions, and passes everything else up to its user.
 */
import type { Clock } from '../clock.js';
import { BRANCH_COOKIE, formatUri, type SipRequest, type SipResponse } from '../message/index.js';
import type { SipTransportError } from '../errors.js';
import { InviteClientTransaction } from './invite-client.js';
import { InviteServerTransaction } from './invite-server.js';
import { NonInviteClientTransaction } from './non-invite-client.js';
import { NonInviteServerTransaction } from './non-invite-server.js';
import { CompletedResponses } from './completed-responses.js';
import { timersFor, type TimerSettings } from './timers.js';
import type {
  ClientTransactionUser,
  MessageChannel,
  ServerTransactionUser,
  Transaction,
  TransactionContext,
} from './transaction.js';

export type ServerTransaction = InviteServerTransaction | NonInviteServerTransaction;
export type ClientTransaction = InviteClientTransaction | NonInviteClientTransaction;

export interface TransactionLayerUser {
  /**
   * A request that starts a new server transaction (`tx` set), or an ACK that no server transaction absorbed
   * (`tx` null: the ACK for a 2xx, RFC 3261 §17.2.1, which belongs to the dialog).
   */
  onRequest(req: SipRequest, tx: ServerTransaction | null): void;
  /** A response that matched no client transaction (§18.1.2: dropped, but the user may want to see it). */
  onStrayResponse?(res: SipResponse): void;
  /** `tx` undefined: a non-INVITE's final response, sent or resent after its transaction ended (CompletedResponses). */
  onServerTransportError?(tx: ServerTransaction | undefined, error: SipTransportError): void;
  /** An accepted INVITE never got its ACK (§13.3.1.4). */
  onAckTimeout?(tx: InviteServerTransaction): void;
}

export interface TransactionLayerOptions {
  clock: Clock;
  timers: TimerSettings;
  user: TransactionLayerUser;
  /** The channel a response to `req` goes back through (§18.2.2). */
  responseChannel(req: SipRequest): MessageChannel;
}

function serverKey(req: SipRequest, method: string): string {
  const via = req.topVia;
  const branch = via?.params.get('branch') ?? '';
  if (branch.startsWith(BRANCH_COOKIE)) {
    // §17.2.3: branch, sent-by and method (ACK matches the INVITE).
    return `${branch}|${via!.host}:${via!.port ?? ''}|${method}`;
  }
  // §17.2.3 (RFC 2543): Request-URI, From tag, Call-ID, CSeq number and top Via; the To tag is left out so the
  // ACK of a non-2xx (which carries our tag) matches its INVITE.
  return `2543|${formatUri(req.uri)}|${req.fromTag ?? ''}|${req.callId}|${req.cseq.seq}|${req.headers.get('via')}|${method}`;
}

/** The key of an accepted INVITE awaiting the ACK of its 2xx: the ACK has a new branch, so match by dialog. */
function acceptedKey(req: SipRequest): string {
  return `${req.callId}|${req.cseq.seq}`;
}

function clientKey(branch: string, method: string): string {
  return `${branch}|${method === 'ACK' ? 'INVITE' : method}`;
}

export class TransactionLayer {
  readonly #opts: TransactionLayerOptions;
  readonly #server = new Map<string, ServerTransaction>();
  readonly #client = new Map<string, ClientTransaction>();
  /** INVITE server transactions whose 2xx awaits its ACK, by Call-ID and CSeq number. */
  readonly #accepted = new Map<string, InviteServerTransaction>();
  /**
   * Non-INVITE server transactions over UDP in Completed, as their final response's bytes (§17.2.2), and INVITE
   * server transactions in Accepted once acknowledged, as their key (RFC 6026 §7.1).
   */
  readonly #completed: CompletedResponses;
  /** INVITE client transactions in Accepted once the TU sent the ACK, as their key and the ACK's resend (Timer M). */
  readonly #acked: CompletedResponses;
  /**
   * Non-INVITE client transactions in Completed over UDP, as their key (§17.1.2.2, Timer K). A table of its own: each
   * table forgets in the order entries came, and K (5 s) entries behind M (32 s) ones would wait out M too.
   */
  readonly #absorbing: CompletedResponses;

  constructor(opts: TransactionLayerOptions) {
    this.#opts = opts;
    this.#completed = new CompletedResponses(opts.clock, timersFor(opts.timers, false).J, (e) =>
      opts.user.onServerTransportError?.(undefined, e),
    );
    // Only `keep` is used here: nothing is sent through it that could fail.
    this.#acked = new CompletedResponses(opts.clock, timersFor(opts.timers, false).M, () => {});
    this.#absorbing = new CompletedResponses(opts.clock, timersFor(opts.timers, false).K, () => {});
  }

  get size(): { server: number; client: number } {
    const client = this.#client.size + this.#acked.size + this.#absorbing.size;
    return { server: this.#server.size + this.#completed.size, client };
  }

  receiveRequest(req: SipRequest): void {
    const method = req.method;
    const key = serverKey(req, method === 'ACK' ? 'INVITE' : method);
    const existing = this.#server.get(key);
    if (method === 'ACK') {
      if (existing instanceof InviteServerTransaction && existing.lastResponse && existing.lastResponse.status >= 300) {
        existing.receiveAck(); // §17.2.1: the ACK of a non-2xx is absorbed by the transaction
        return;
      }
      const accepted = this.#accepted.get(acceptedKey(req));
      if (accepted) {
        accepted.receive2xxAck();
        this.#accepted.delete(acceptedKey(req));
      }
      this.#opts.user.onRequest(req, null);
      return;
    }
    if (existing) {
      existing.receiveRetransmission();
      return;
    }
    if (this.#completed.resend(key)) return; // §17.2.2: a retransmission in Completed gets the response again
    const tx = this.#createServer(key, req);
    this.#opts.user.onRequest(req, tx);
  }

  /** The INVITE server transaction a CANCEL refers to (§9.2): same key, method INVITE. */
  findInviteFor(cancel: SipRequest): InviteServerTransaction | undefined {
    const tx = this.#server.get(serverKey(cancel, 'INVITE'));
    return tx instanceof InviteServerTransaction ? tx : undefined;
  }

  #createServer(key: string, req: SipRequest): ServerTransaction {
    const hooks = new ServerHooks(
      key,
      req,
      this.#opts,
      this.#opts.responseChannel(req),
      this.#completed,
      this.#server,
      this.#accepted,
    );
    const tx: ServerTransaction =
      req.method === 'INVITE'
        ? new InviteServerTransaction(key, req, hooks, hooks)
        : new NonInviteServerTransaction(key, req, hooks, hooks);
    hooks.tx = tx;
    this.#server.set(key, tx);
    return tx;
  }

  /** Sends a final or provisional response through its server transaction, noting a 2xx that awaits ACK. */
  respond(tx: ServerTransaction, res: SipResponse): void {
    tx.respond(res);
    if (tx instanceof InviteServerTransaction && tx.awaitingAck) {
      this.#accepted.set(acceptedKey(tx.request), tx);
    }
  }

  /** Starts a client transaction for `req`, whose top Via already carries a fresh branch. */
  sendRequest(req: SipRequest, channel: MessageChannel, user: ClientTransactionUser): ClientTransaction {
    const branch = req.topVia?.params.get('branch') ?? '';
    const key = clientKey(branch, req.method);
    const ctx = {
      clock: this.#opts.clock,
      timers: this.#opts.timers,
      channel,
      onTerminated: (t: Transaction) => {
        if (this.#client.get(key) === t) this.#client.delete(key);
      },
      completed: this.#keptClients(req.method),
    };
    const tx =
      req.method === 'INVITE'
        ? new InviteClientTransaction(key, req, ctx, user)
        : new NonInviteClientTransaction(key, req, ctx, user);
    this.#client.set(key, tx);
    tx.start();
    return tx;
  }

  /**
   * The TU has sent the ACK of `invite`'s 2xx (§13.2.2.4): its client transaction, in Accepted, leaves to the layer
   * what is left until Timer M, `resendAck` for each 2xx that comes again (a retransmission, or another fork's 2xx:
   * the TU tells them apart by the To tag). False when there is no such transaction (M has passed, or the INVITE was
   * not sent through this layer).
   */
  acknowledged(invite: SipRequest, resendAck: (res: SipResponse) => void): boolean {
    const tx = this.#client.get(clientKey(invite.topVia?.params.get('branch') ?? '', 'INVITE'));
    return tx instanceof InviteClientTransaction && tx.acknowledged(resendAck);
  }

  /** §17.1.3: a response matches by the branch of its top Via and its CSeq method. */
  receiveResponse(res: SipResponse): void {
    const branch = res.topVia?.params.get('branch') ?? '';
    const method = res.cseq.method;
    const key = clientKey(branch, method);
    const tx = this.#client.get(key);
    if (tx) tx.receiveResponse(res);
    // A response again for a transaction that only waits out Timer M or K: absorbed (a 2xx again: the ACK again).
    else if (!this.#keptClients(method).resend(key, method === 'INVITE' && res.status >= 200 && res.status < 300, res))
      this.#opts.user.onStrayResponse?.(res);
  }

  /** Where client transactions of `method` are kept once only a timer is left. */
  #keptClients(method: string): CompletedResponses {
    return method === 'INVITE' ? this.#acked : this.#absorbing;
  }

  close(): void {
    for (const tx of [...this.#server.values(), ...this.#client.values()]) tx.terminate();
    this.#server.clear();
    this.#client.clear();
    this.#accepted.clear();
    this.#completed.clear();
    this.#acked.clear();
    this.#absorbing.clear();
  }
}

/**
 * A server transaction's context and user in one object, its callbacks as methods: one allocation per request, and
 * no closures (each closure made per request was also renamed by the TypeScript loader's keep-names helper).
 */
class ServerHooks implements TransactionContext, ServerTransactionUser {
  tx!: ServerTransaction;
  readonly clock: Clock;
  readonly timers: TimerSettings;

  constructor(
    readonly key: string,
    readonly req: SipRequest,
    readonly opts: TransactionLayerOptions,
    readonly channel: MessageChannel,
    readonly completed: CompletedResponses,
    readonly server: Map<string, ServerTransaction>,
    readonly accepted: Map<string, InviteServerTransaction>,
  ) {
    this.clock = opts.clock;
    this.timers = opts.timers;
  }

  onTerminated(t: Transaction): void {
    if (this.server.get(this.key) === t) this.server.delete(this.key);
    if (this.req.method === 'INVITE' && this.accepted.get(acceptedKey(this.req)) === t)
      this.accepted.delete(acceptedKey(this.req));
  }

  onTransportError(e: SipTransportError): void {
    this.opts.user.onServerTransportError?.(this.tx, e);
  }

  onAckTimeout(): void {
    this.opts.user.onAckTimeout?.(this.tx as InviteServerTransaction);
  }
}
