/**
 * The handle a request handler answers through (`srv`): builds responses per RFC 3261 §8.2.6 with one To tag
 * for every response of the transaction, copies Record-Route and adds Contact on responses that can create a
 * dialog (§12.1.1), and aborts `signal` when a CANCEL arrives (§9.2).
 */
import { applyHeaders, createResponse, type HeaderInit, type SipRequest, type SipResponse } from '../message/index.js';
import type { ServerTransaction, TransactionLayer } from '../transaction/index.js';
import { newTag } from './ids.js';
import { ReliableProvisionals, requires100rel, type ReliableHost } from './reliable-provisional.js';

export interface ResponseOptions {
  headers?: HeaderInit;
  body?: string | Buffer;
  /** Content-Type of the body, default application/sdp. */
  contentType?: string;
}

const DIALOG_CREATING = new Set(['INVITE', 'SUBSCRIBE', 'REFER', 'NOTIFY']);

export class Responder {
  readonly request: SipRequest;
  readonly #tx: ServerTransaction;
  readonly #layer: TransactionLayer;
  readonly #contact: string;
  #abort?: AbortController; // made on first use: most requests are never canceled
  #canceled = false;
  #toTag?: string;
  #final?: SipResponse;
  #onFinal?: () => void;

  /** RFC 3262 state when the INVITE requires 100rel (its 18x are sent reliably). */
  readonly #reliable?: ReliableProvisionals;

  constructor(
    request: SipRequest,
    tx: ServerTransaction,
    layer: TransactionLayer,
    contact: string,
    reliable?: Omit<ReliableHost, 'resend'>,
  ) {
    this.request = request;
    this.#tx = tx;
    this.#layer = layer;
    this.#contact = contact;
    if (reliable && request.method === 'INVITE' && !request.toTag && requires100rel(request)) {
      this.#reliable = new ReliableProvisionals(request, {
        ...reliable,
        resend: (res) => {
          if (!this.#final) this.#layer.respond(this.#tx, res);
        },
      });
    }
  }

  /** A PRACK for this INVITE's reliable provisional (RFC 3262 §3): the status to answer it with. */
  prack(req: SipRequest): number {
    return this.#reliable?.prack(req) ?? 481;
  }

  /** Our To tag: the one in the request (in-dialog) or one made for this transaction. */
  get toTag(): string {
    this.#toTag ??= this.request.toTag ?? newTag();
    return this.#toTag;
  }

  /** Calls `listener` once, when the final response is sent: the request's handling is over. */
  onFinalResponse(listener: () => void): void {
    this.#onFinal = listener;
  }

  /** Aborted when the peer CANCELs this request before a final response. */
  get signal(): AbortSignal {
    if (!this.#abort) {
      this.#abort = new AbortController();
      if (this.#canceled) this.#abort.abort();
    }
    return this.#abort.signal;
  }

  /** True once a CANCEL for this request arrived before the final response. */
  get canceled(): boolean {
    return this.#canceled;
  }

  get finalResponse(): SipResponse | undefined {
    return this.#final;
  }

  get transaction(): ServerTransaction {
    return this.#tx;
  }

  /** Headers added to this request's 2xx, whoever sends it (a dialog's session timer, RFC 4028 §10). */
  addSuccessHeaders(headers: Record<string, string>): void {
    this.#success = { ...this.#success, ...headers };
  }

  #success?: Record<string, string>;

  /** Sends a response; a second final response is ignored and returns undefined. */
  send(status: number, reason?: string, opts: ResponseOptions = {}): SipResponse | undefined {
    if (this.#final) return undefined;
    let reliable: Record<string, string> | null | undefined;
    if (this.#reliable && status > 100 && status < 200) {
      reliable = this.#reliable.prepare();
      if (reliable === null) return undefined; // another reliable 18x is still unacknowledged (RFC 3262 §3)
    }
    const res = createResponse(this.request, status, reason, status > 100 ? this.toTag : undefined);
    if (status > 100 && status < 300 && DIALOG_CREATING.has(this.request.method) && !this.request.toTag) {
      for (const rr of this.request.headers.getAll('record-route')) res.headers.append('record-route', rr);
      res.headers.append('contact', this.#contact);
    }
    applyHeaders(res.headers, opts.headers);
    if (this.#success && status >= 200 && status < 300) applyHeaders(res.headers, this.#success);
    if (opts.body !== undefined) {
      res.body = typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body;
      if (!res.headers.has('content-type')) res.headers.set('content-type', opts.contentType ?? 'application/sdp');
    }
    if (reliable) applyHeaders(res.headers, reliable);
    if (status >= 200) {
      this.#final = res;
      this.#reliable?.stop();
      // No CANCEL can abort it now. The transaction keeps this responder for up to 32 s (Timer L, RFC 6026), and
      // the signal's listeners keep whatever they close over: every call's whole state would stay in memory that
      // long, a heap that grows with the call rate and collections that stall the loop.
      this.#abort = undefined;
    }
    this.#layer.respond(this.#tx, res);
    if (reliable) this.#reliable!.sent(res);
    const final = status >= 200 ? this.#onFinal : undefined;
    if (final) {
      this.#onFinal = undefined;
      final();
    }
    return res;
  }

  /** Called by the user agent on CANCEL (§9.2). */
  cancel(): void {
    if (this.#final || this.#canceled) return;
    this.#canceled = true;
    this.#abort?.abort();
  }
}
