/**
 * The UA core: per-method request handlers, dialogs, and promise-returning UAS/UAC operations in the spirit
 * of drachtio-srf, over the transaction layer (RFC 3261 §8, §12-§15) and the transport layer (§18).
 */
import { systemClock, type Clock } from '../clock.js';
import { SipCanceledError, SipError, SipResponseError, SipStateError, SipTimeoutError } from '../errors.js';
import { silentLogger, type Logger } from '../logger.js';
import {
  applyHeaders,
  DEFAULT_LIMITS,
  formatUri,
  isSipUri,
  parseUri,
  SipHeaders,
  SipRequest,
  type HeaderInit,
  type MessageSource,
  type ParseLimits,
  type SipMessage,
  type SipResponse,
  type TransportName,
  type Uri,
} from '../message/index.js';
import {
  DEFAULT_TIMER_SETTINGS,
  TransactionLayer,
  type ServerTransaction,
  type TimerSettings,
} from '../transaction/index.js';
import {
  TransportLayer,
  type ConnectionLimits,
  type ListenOptions,
  type MessageTap,
  type SourceAdmission,
  type Target,
  type UdpFront,
} from '../transport/index.js';
import { Dialog, targetForUri, type DialogHost } from '../dialog/dialog.js';
import { RFC_MIN_SE, readSessionExpires, uasSessionTimer } from '../dialog/session-timer.js';
import { DigestClient, type DigestCredentials } from '../auth/digest-client.js';
import { DEFAULT_POLICY, validateRequest, type RequestPolicy } from './request-validator.js';
import { Responder } from './responder.js';
import { newBranch, newCallId, newTag } from './ids.js';
import { InviteClient } from './invite-client-flow.js';
import { createB2BUA, type B2buaLegs, type B2buaOptions } from './b2bua.js';
import type { Outbound, UacOptions, UasOptions } from './leg-options.js';

export interface UserAgentOptions {
  logger?: Logger;
  /** Overrides of T1, T2, T4 (ms). */
  timers?: Partial<TimerSettings>;
  clock?: Clock;
  limits?: Partial<ParseLimits>;
  /** Host for Via and Contact when listening on a wildcard address (default: the bound address, or 127.0.0.1). */
  advertisedHost?: string;
  policy?: Partial<RequestPolicy>;
  /** CRLF keep-alive interval on connections we open (ms, 0 = off). */
  keepAliveMs?: number;
  tls?: { rejectUnauthorized?: boolean; ca?: string | Buffer };
  /** Called for every received request before any processing; false drops it silently (no response). */
  admitRequest?: (req: SipRequest) => boolean;
  /**
   * Called with the source IP before anything it sent is parsed (each datagram, each connection at accept and
   * each message on it); false drops the datagram or closes the connection. For ban lists: cheap, synchronous.
   */
  admitSource?: SourceAdmission;
  /** Inbound TCP/TLS/WS/WSS connection caps and first-message deadline (defaults: 64 per IP, 10,000, 10 s). */
  connectionLimits?: Partial<ConnectionLimits>;
  /**
   * Asked with the peer's IP when a UDP dialog is made (the INVITE's source for a UAS dialog, the 2xx's source for
   * a UAC one). True pins the dialog: its in-dialog requests (ACK, BYE, re-INVITE, NOTIFY ...) go to that address
   * and port, whatever the peer's Contact and Record-Route name; false (and the default) follows them as RFC 3261
   * §12.2.1.1 says. An application pins peers it does not trust to name a next hop (end-user phones) and lets
   * carriers' gateways follow their Contact.
   */
  pinUdpDialogs?: (peerAddress: string) => boolean;
  /** Given every SIP message received and sent, as bytes with both ends' addresses (transport/tap.ts). */
  tap?: MessageTap;
}

export type RequestHandler = (req: SipRequest, srv: Responder) => unknown;

export interface RequestOptions {
  method: string;
  headers?: HeaderInit;
  body?: string | Buffer;
  contentType?: string;
  /** From header value (name-addr); default `<sip:simu@host>`. */
  from?: string;
  to?: string;
  auth?: DigestCredentials;
  proxy?: Outbound;
}

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE, REGISTER, MESSAGE, NOTIFY, REFER, PRACK';

export class UserAgent {
  readonly logger: Logger;
  readonly clock: Clock;
  readonly timers: TimerSettings;
  readonly #transport: TransportLayer;
  readonly #tx: TransactionLayer;
  readonly #handlers = new Map<string, RequestHandler>();
  /**
   * Methods whose handler also takes the in-dialog requests (a To tag) that match no dialog of this agent: the
   * application keeps that dialog itself (a subscription refreshed in its dialog, RFC 6665 §4.1.2.1) and answers
   * 481 when it does not know it either.
   */
  readonly #inDialog = new Set<string>();
  readonly #dialogs = new Map<string, Dialog>();
  /**
   * The Responder of each request this agent received is kept on the request itself, as a property under this
   * agent's own symbol, not in a WeakMap: V8's scavenges treat the values of a WeakMap whose table is in the old
   * generation as live, and each Responder holds its request, so every request received, with its parsed headers,
   * transaction and response, would outlive its scavenges and be promoted to die in a mark-compact. A property goes
   * with its request.
   */
  readonly #responderKey = Symbol('responder');
  /** createUAS calls waiting for the ACK of their 2xx, by Call-ID and CSeq number. */
  readonly #ackWaiters = new Map<string, { resolve: () => void; reject: (e: SipError) => void }>();
  readonly #policy: RequestPolicy;
  readonly #advertised?: string;
  readonly #host: DialogHost;
  readonly #flowClosedListeners: Array<(flowId: string) => void> = [];
  readonly #pinUdp?: (peerAddress: string) => boolean;
  /** INVITEs with a reliable 18x waiting for its PRACK, by early-dialog id (RFC 3262). */
  readonly #prackable = new Map<string, Responder>();
  #closed = false;

  constructor(opts: UserAgentOptions = {}) {
    this.logger = opts.logger ?? silentLogger;
    this.clock = opts.clock ?? systemClock;
    this.timers = { ...DEFAULT_TIMER_SETTINGS, ...opts.timers };
    this.#policy = { ...DEFAULT_POLICY, ...opts.policy };
    this.#advertised = opts.advertisedHost;
    this.#pinUdp = opts.pinUdpDialogs;
    this.#transport = new TransportLayer({
      logger: this.logger,
      limits: { ...DEFAULT_LIMITS, ...opts.limits },
      keepAliveMs: opts.keepAliveMs ?? 0,
      admitSource: opts.admitSource,
      connectionLimits: opts.connectionLimits,
      tlsRejectUnauthorized: opts.tls?.rejectUnauthorized,
      tlsCa: opts.tls?.ca,
      tap: opts.tap,
      onFlowClosed: (flowId) => {
        for (const fn of this.#flowClosedListeners) fn(flowId);
      },
      onMessage: (m: SipMessage) => {
        // The application's edge policy (floods, scanners, bans) sees every request first; a dropped one gets no
        // answer at all and never reaches the transaction layer.
        if (m.isRequest && opts.admitRequest && !opts.admitRequest(m)) return;
        return m.isRequest ? this.#tx.receiveRequest(m) : this.#tx.receiveResponse(m);
      },
    });
    this.#tx = new TransactionLayer({
      clock: this.clock,
      timers: this.timers,
      responseChannel: (req) => this.#transport.responseChannel(req),
      user: {
        onRequest: (req, tx) => this.#onRequest(req, tx),
        onAckTimeout: (tx) =>
          this.#ackWaiters.get(ackKey(tx.request))?.reject(new SipTimeoutError('no ACK for the 2xx')),
        onServerTransportError: (_tx, e) => this.logger.warn({ err: e }, 'response not delivered'),
      },
    });
    this.#host = {
      send: (req, target) => this.#send(req, target),
      sendAck: (ack, target) => this.sendAck(ack, target),
      acknowledged: (invite, resendAck) => void this.#tx.acknowledged(invite, resendAck),
      via: (t) => this.via(t),
      contact: (t) => this.contact(t),
      forget: (d) => this.#dialogs.delete(d.id),
    };
  }

  async listen(opts: ListenOptions): Promise<void> {
    if (this.#closed) throw new SipStateError('user agent closed');
    await this.#transport.listen(opts);
  }

  /** The UDP front (transport/udp-front.ts), when listening with one and the kernel delivers to it. */
  get udpFront(): UdpFront | undefined {
    return this.#transport.udpFront;
  }

  /** The bound address of a transport, e.g. to learn the port after listening on port 0. */
  address(transport: TransportName): { host: string; port: number } | undefined {
    return this.#transport.local(transport);
  }

  /**
   * Registers the handler for out-of-dialog requests of `method` (one per method; the last one wins); with
   * `inDialog`, also for its in-dialog requests that match no dialog of this agent.
   */
  onRequest(method: string, handler: RequestHandler, opts: { inDialog?: boolean } = {}): this {
    const m = method.toUpperCase();
    this.#handlers.set(m, handler);
    if (opts.inDialog) this.#inDialog.add(m);
    else this.#inDialog.delete(m);
    return this;
  }

  /** Calls `fn` with the id of each connection (TCP, TLS, WS, WSS) that closes, e.g. to drop its registrations. */
  onFlowClosed(fn: (flowId: string) => void): this {
    this.#flowClosedListeners.push(fn);
    return this;
  }

  get dialogCount(): number {
    return this.#dialogs.size;
  }

  /** The live dialogs, for diagnosis: ID, role, state and age in ms. */
  dialogs(): Array<{ id: string; role: 'uac' | 'uas'; state: string; ageMs: number }> {
    const now = this.clock.now();
    return [...this.#dialogs.values()].map((d) => ({
      id: d.id,
      role: d.role,
      state: d.state,
      ageMs: now - d.createdAt,
    }));
  }

  /** Counts for monitoring: live dialogs and transactions. */
  stats(): { dialogs: number; serverTransactions: number; clientTransactions: number } {
    const t = this.#tx.size;
    return { dialogs: this.#dialogs.size, serverTransactions: t.server, clientTransactions: t.client };
  }

  #sentBy(transport: TransportName): string {
    const local = this.#transport.local(transport) ?? this.#transport.local('UDP') ?? { host: '127.0.0.1', port: 5060 };
    let host = this.#advertised ?? local.host;
    if (host === '0.0.0.0' || host === '::') host = '127.0.0.1';
    if (host.includes(':')) host = `[${host}]`;
    return `${host}:${local.port}`;
  }

  /** A Via value with a fresh branch; `rport` asks for symmetric responses (RFC 3581). */
  via(transport: TransportName): string {
    return `SIP/2.0/${transport} ${this.#sentBy(transport)};branch=${newBranch()};rport`;
  }

  contact(transport: TransportName): string {
    const t = transport === 'UDP' ? '' : `;transport=${transport.toLowerCase()}`;
    return `<sip:${this.#sentBy(transport)}${t}>`;
  }

  /** Where a UDP dialog learned from `src` is pinned to, if the application pins that peer (pinUdpDialogs). */
  #pinnedPeer(src: MessageSource | undefined): { host: string; port: number } | undefined {
    if (!src || src.transport !== 'UDP' || !this.#pinUdp?.(src.address)) return undefined;
    return { host: src.address, port: src.port };
  }

  #onRequest(req: SipRequest, tx: ServerTransaction | null): void {
    if (!tx) return this.#onAck(req);
    // Only an INVITE's 18x may be sent reliably (RFC 3262): no other request is given the closures it takes.
    const reliable =
      req.method !== 'INVITE'
        ? undefined
        : {
            clock: this.clock,
            t1: this.timers.T1,
            // RFC 3262: PRACKs for this INVITE's reliable 18x reach it through the early dialog's identity.
            waiting: (on: boolean) => {
              const key = Dialog.key(req.callId, srv.toTag, req.fromTag ?? '');
              if (on) this.#prackable.set(key, srv);
              else this.#prackable.delete(key);
            },
          };
    const srv = new Responder(req, tx, this.#tx, this.contact(req.source?.transport ?? 'UDP'), reliable);
    (req as unknown as Record<symbol, Responder>)[this.#responderKey] = srv;
    if (req.method === 'CANCEL') return this.#onCancel(req, srv);
    if (req.method === 'PRACK') {
      const invite = this.#prackable.get(Dialog.key(req.callId, req.toTag ?? '', req.fromTag ?? ''));
      return void srv.send(invite ? invite.prack(req) : 481);
    }
    const toTag = req.toTag;
    if (toTag !== undefined) {
      const dialog = this.#dialogs.get(Dialog.key(req.callId, toTag, req.fromTag ?? ''));
      if (dialog) {
        const bad = dialog.checkSequence(req);
        if (bad) return void srv.send(bad);
        return dialog.receive(req, srv);
      }
      // §12.2.2: a request for a dialog we do not know gets 481, unless its handler keeps such dialogs itself (the
      // handler of an inDialog method is registered with it, so it is found below).
      if (!this.#inDialog.has(req.method)) return void srv.send(481);
    }
    const rejection = validateRequest(req, this.#policy);
    if (rejection) return void srv.send(rejection.status, undefined, { headers: rejection.headers });
    const handler = this.#handlers.get(req.method);
    if (!handler) {
      // §11.2 answers OPTIONS by default; §8.2.1: a method we do not handle gets 405 with Allow.
      return void srv.send(req.method === 'OPTIONS' ? 200 : 405, undefined, { headers: { Allow: ALLOW } });
    }
    this.#runHandler(handler, req, srv);
  }

  #runHandler(handler: RequestHandler, req: SipRequest, srv: Responder): void {
    try {
      const r = handler(req, srv);
      // An arrow given in place, not a named one: the TypeScript loader's keep-names helper renames each named
      // closure as it is made, once per request here.
      if (r instanceof Promise) r.catch((err: unknown) => this.#handlerFailed(err, req, srv));
    } catch (err) {
      this.#handlerFailed(err, req, srv);
    }
  }

  #handlerFailed(err: unknown, req: SipRequest, srv: Responder): void {
    this.logger.error({ err, callId: req.callId, method: req.method }, 'request handler failed');
    const status = err instanceof SipError && err.status >= 300 ? err.status : 500;
    srv.send(status);
  }

  /** The Responder of a request this agent received (undefined for any other request). */
  #responderOf(req: SipRequest): Responder | undefined {
    return (req as unknown as Record<symbol, Responder | undefined>)[this.#responderKey];
  }

  #onAck(ack: SipRequest): void {
    const dialog = this.#dialogs.get(Dialog.key(ack.callId, ack.toTag ?? '', ack.fromTag ?? ''));
    if (!dialog) return; // §17.2.3: an ACK matching nothing is dropped
    if (ack.body.length > 0 && !dialog.remoteSdp) dialog.remoteSdp = ack.text;
    this.#ackWaiters.get(ackKey(ack))?.resolve();
  }

  /** §9.2: CANCEL gets 481 without a matching INVITE; otherwise 200, and the INVITE gets 487. */
  #onCancel(cancel: SipRequest, srv: Responder): void {
    const ist = this.#tx.findInviteFor(cancel);
    if (!ist) return void srv.send(481);
    srv.send(200);
    const inviteSrv = this.#responderOf(ist.request);
    if (inviteSrv && !inviteSrv.finalResponse) {
      inviteSrv.cancel(); // the application hears it first (a B2BUA cancels its other leg)
      inviteSrv.send(487);
    }
  }

  /**
   * Answers an INVITE with 200 and `localSdp` and resolves with the dialog once the ACK arrives
   * (rejects with SipCanceledError if the caller canceled first, SipTimeoutError if no ACK came).
   */
  async createUAS(req: SipRequest, opts: UasOptions = {}): Promise<Dialog> {
    const srv = this.#responderOf(req);
    if (!srv || req.method !== 'INVITE') throw new SipStateError('createUAS needs an INVITE received by this agent');
    if (srv.canceled) throw new SipCanceledError();
    if (srv.finalResponse) throw new SipStateError('the INVITE has already been answered');
    const contact = req.contact?.uri;
    if (!contact) {
      srv.send(400, 'Missing Contact');
      throw new SipResponseError(400, 'Missing Contact');
    }
    const src = req.source!;
    const dialog = new Dialog(this.#host, {
      role: 'uas',
      callId: req.callId,
      localTag: srv.toTag,
      remoteTag: req.fromTag ?? '',
      localParty: stripTag(req.headers.get('to') ?? ''),
      remoteParty: stripTag(req.headers.get('from') ?? ''),
      localSeq: 0,
      remoteSeq: req.cseq.seq,
      remoteTarget: contact,
      routeSet: req.headers.getAll('record-route'), // §12.1.1: in the order received
      transport: src.transport,
      flowId: src.transport === 'UDP' ? undefined : src.flowId,
      pinnedPeer: this.#pinnedPeer(src),
      localSdp: opts.localSdp,
      remoteSdp: req.body.length > 0 ? req.text : undefined,
      createdAt: this.clock.now(),
    });
    this.#dialogs.set(dialog.id, dialog);
    const key = ackKey(req);
    const acked = new Promise<void>((resolve, reject) => this.#ackWaiters.set(key, { resolve, reject }));
    // RFC 4028: an INVITE asking for a session timer gets the interval and refresher in the 200 and a running timer.
    const minSe = this.#policy.minSessionExpires ?? RFC_MIN_SE;
    const timer = opts.sessionTimer === false ? undefined : uasSessionTimer(req, minSe);
    srv.send(200, 'OK', { body: opts.localSdp, headers: timer ? { ...timer.headers, ...opts.headers } : opts.headers });
    // A dialog that ends before its ACK (the caller's BYE read first, or its ACK lost and then its BYE) is waited
    // for no longer: its ACK would change nothing, and the caller's code should not hang on it for 64*T1.
    let onEnd: (() => void) | undefined;
    const ended = new Promise<void>((resolve) => dialog.once('destroy', (onEnd = () => resolve())));
    try {
      opts.onConfirmed?.(dialog);
      await Promise.race([acked, ended]);
      if (timer && dialog.state !== 'terminated') dialog.startSessionTimer(this.clock, timer, minSe);
      return dialog;
    } catch (err) {
      // §13.3.1.4: a 2xx that is never ACKed ends the dialog with BYE.
      void dialog.bye();
      dialog.terminate('ack-timeout');
      throw err;
    } finally {
      this.#ackWaiters.delete(key);
      if (onEnd) dialog.off('destroy', onEnd);
    }
  }

  /**
   * The dialog a response to our INVITE makes (§12.1.2): confirmed for a 2xx, early for a reliable 18x (RFC 3262,
   * only to send its PRACK). `localSeq` is the last CSeq number used in it.
   */
  #uacDialog(invite: SipRequest, res: SipResponse, target: Target, localSdp: string | undefined, localSeq: number) {
    return new Dialog(this.#host, {
      role: 'uac',
      callId: invite.callId,
      localTag: invite.fromTag ?? '',
      remoteTag: res.toTag ?? '',
      localParty: stripTag(invite.headers.get('from') ?? ''),
      remoteParty: stripTag(res.headers.get('to') ?? ''),
      localSeq,
      remoteSeq: undefined,
      remoteTarget: res.contact?.uri ?? invite.uri,
      routeSet: res.headers.getAll('record-route').reverse(), // §12.1.2: reversed
      transport: target.transport,
      // In-dialog requests (ACK, BYE) reuse the connection the 2xx came on: a WebSocket phone's Contact host
      // cannot be resolved or connected to (RFC 7118 §5).
      flowId: target.transport === 'UDP' ? undefined : (res.source?.flowId ?? target.flowId),
      pinnedPeer: target.transport === 'UDP' ? this.#pinnedPeer(res.source) : undefined,
      localSdp,
      remoteSdp: res.body.length > 0 ? res.text : undefined,
      createdAt: this.clock.now(),
    });
  }

  /**
   * The handler of other forks' 2xx for a call to `target`, made here and not in createUAC: a closure there would
   * share createUAC's context (the INVITE, the caller's options and callbacks) and keep it until Timer M.
   */
  #otherForkEnder(target: Target): (res: SipResponse) => () => void {
    return (res) => this.#endOtherFork(res, target);
  }

  /**
   * §13.2.2.4: a 2xx from a fork other than the one the call went on (a proxy downstream forked the INVITE and two
   * callees answered) gets an ACK of its own and a BYE, since the UAC keeps one dialog. Built from the 2xx alone (its
   * From is this agent's, its CSeq the INVITE's), so that what a call keeps until Timer M holds no request. Returns the
   * ACK's resend for that fork's own retransmissions.
   */
  #endOtherFork(res: SipResponse, target: Target): () => void {
    // A 2xx must carry a Contact (§13.3.1.4); without one the To's URI (the INVITE's Request-URI as first sent).
    const remoteTarget = res.contact?.uri ?? res.to?.uri;
    if (!remoteTarget) return () => undefined;
    const from = res.headers.get('from') ?? '';
    const dialog = new Dialog(this.#host, {
      role: 'uac',
      callId: res.callId,
      localTag: res.fromTag ?? '',
      remoteTag: res.toTag ?? '',
      localParty: stripTag(from),
      remoteParty: stripTag(res.headers.get('to') ?? ''),
      localSeq: res.cseq.seq,
      remoteSeq: undefined,
      remoteTarget,
      routeSet: res.headers.getAll('record-route').reverse(),
      transport: target.transport,
      flowId: target.transport === 'UDP' ? undefined : (res.source?.flowId ?? target.flowId),
      pinnedPeer: target.transport === 'UDP' ? this.#pinnedPeer(res.source) : undefined,
      localSdp: undefined,
      remoteSdp: undefined,
      createdAt: this.clock.now(),
    });
    const resend = dialog.ackResender(dialog.acknowledge(res.cseq.seq));
    this.logger.info({ callId: res.callId, toTag: res.toTag }, 'another fork answered the INVITE: ACK and BYE');
    void dialog.bye();
    return resend;
  }

  /** Places a call; resolves with the confirmed dialog, rejects with a SipError carrying the status. */
  async createUAC(uri: string | Uri, opts: UacOptions = {}): Promise<Dialog> {
    const { req, target } = this.#build('INVITE', uri, {
      method: 'INVITE',
      headers: opts.headers,
      body: opts.localSdp,
      from: opts.from,
      to: opts.to,
      proxy: opts.proxy,
    });
    const digest = opts.auth ? new DigestClient(opts.auth) : undefined;
    let invite = req;
    // RFC 3262: PRACKs go in the early dialog and take CSeq numbers after the INVITE's; the dialog goes on from there.
    let localSeq = invite.cseq.seq;
    for (let attempt = 0; ; attempt++) {
      localSeq = Math.max(localSeq, invite.cseq.seq);
      const sent = invite;
      const onReliable = (res: SipResponse, rseq: number) => {
        const early = this.#uacDialog(sent, res, target, opts.localSdp, localSeq);
        localSeq += 1;
        early
          .request('PRACK', { headers: { RAck: `${rseq} ${sent.cseq.seq} INVITE` } })
          .catch((err: unknown) => this.logger.debug({ err, callId: sent.callId }, 'PRACK not answered'));
      };
      const flow = new InviteClient(
        this.#tx,
        this.#transport,
        this.timers,
        this.clock,
        invite,
        target,
        { ...opts, onReliable },
        this.logger,
      );
      const res = await flow.run();
      if (res.status < 300) {
        const dialog = this.#uacDialog(invite, res, target, opts.localSdp, localSeq);
        this.#dialogs.set(dialog.id, dialog);
        // RFC 4028 §7.2: a 2xx naming a session timer starts it, refreshed by whoever it names (uac: us).
        const se = readSessionExpires(res);
        if (se) {
          const minSe = this.#policy.minSessionExpires ?? RFC_MIN_SE;
          const seconds = Math.max(se.seconds, minSe);
          dialog.startSessionTimer(
            this.clock,
            { seconds, refresher: se.refresher === 'uas' ? 'remote' : 'local' },
            minSe,
          );
        }
        flow.acknowledge(dialog, this.#otherForkEnder(target));
        if (flow.canceled) {
          await dialog.bye();
          throw new SipCanceledError();
        }
        return dialog;
      }
      if (flow.canceled && res.status === 487) throw new SipCanceledError();
      if ((res.status === 401 || res.status === 407) && digest && attempt === 0 && !opts.signal?.aborted) {
        invite = this.#retryWith(invite);
        if (digest.authorize(invite, res)) continue;
      }
      throw Object.assign(new SipResponseError(res.status, res.reason), { response: res });
    }
  }

  /** Bridges the INVITE `req` to `uri`; see b2bua.ts. */
  createB2BUA(req: SipRequest, uri: string | Uri, opts: B2buaOptions = {}): Promise<B2buaLegs> {
    const srv = this.#responderOf(req);
    if (!srv) throw new SipStateError('createB2BUA needs an INVITE received by this agent');
    return createB2BUA(this, req, srv, uri, opts);
  }

  /** Sends an out-of-dialog request (OPTIONS, REGISTER, MESSAGE ...) and resolves with its final response. */
  async request(uri: string | Uri, opts: RequestOptions): Promise<SipResponse> {
    const method = opts.method.toUpperCase();
    if (method === 'INVITE' || method === 'ACK' || method === 'CANCEL') {
      throw new SipStateError(`use createUAC for ${method}`);
    }
    const { req, target } = this.#build(method, uri, opts);
    let res = await this.#send(req, target);
    if ((res.status === 401 || res.status === 407) && opts.auth) {
      const retry = this.#retryWith(req);
      if (new DigestClient(opts.auth).authorize(retry, res)) res = await this.#send(retry, target);
    }
    return res;
  }

  /** §22.2: the retried request has a new branch and the next CSeq. */
  #retryWith(req: SipRequest): SipRequest {
    const r = req.clone();
    r.headers.set('via', this.via(r.topVia?.transport as TransportName));
    r.headers.set('cseq', `${req.cseq.seq + 1} ${req.method}`);
    return r;
  }

  #build(method: string, uriIn: string | Uri, opts: RequestOptions): { req: SipRequest; target: Target } {
    const uri = typeof uriIn === 'string' ? parseUri(uriIn) : uriIn;
    if (!uri) throw new SipStateError(`bad Request-URI ${String(uriIn)}`);
    const target = resolveOutbound(opts.proxy, uri);
    if (!this.#transport.has(target.transport)) throw new SipStateError(`no ${target.transport} transport listening`);
    const h = new SipHeaders();
    h.append('via', this.via(target.transport));
    h.append('max-forwards', '70');
    const host = this.#sentBy(target.transport);
    h.append('from', `${opts.from ?? `<sip:simu@${host}>`};tag=${newTag()}`);
    h.append('to', opts.to ?? `<${formatUri(uri)}>`);
    h.append('call-id', newCallId(host.replace(/:\d+$/, '')));
    h.append('cseq', `1 ${method}`);
    if (method === 'INVITE' || method === 'REGISTER' || method === 'SUBSCRIBE') {
      h.append('contact', this.contact(target.transport));
    }
    applyHeaders(h, opts.headers);
    const req = new SipRequest(method, uri, h, opts.body);
    if (opts.body !== undefined && !h.has('content-type')) h.set('content-type', opts.contentType ?? 'application/sdp');
    return { req, target };
  }

  #send(req: SipRequest, target: Target): Promise<SipResponse> {
    return new Promise((resolve, reject) => {
      this.#tx.sendRequest(req, this.#transport.channelTo(target), {
        onResponse: (res) => {
          if (res.status >= 200) resolve(res);
        },
        onTimeout: () => reject(new SipTimeoutError(`${req.method} timed out`)),
        onTransportError: reject,
      });
    });
  }

  /**
   * A CRLFCRLF keep-alive (RFC 5626 §4.4.1 framing) to a peer, outside any transaction: it keeps a NAT mapping on the
   * way open and a receiving stack ignores it (as this one does, transport-layer.ts).
   */
  async sendKeepAlive(target: Target): Promise<void> {
    const crlf = Buffer.from('\r\n\r\n', 'latin1');
    await this.#transport.channelTo(target).send({ toBuffer: () => crlf } as unknown as SipRequest);
  }

  /** §13.2.2.4: an ACK for a 2xx goes straight to the transport. */
  sendAck(ack: SipRequest, target: Target): void {
    this.#transport
      .channelTo(target)
      .send(ack)
      .catch((err: unknown) => this.logger.warn({ err, callId: ack.callId }, 'ACK not sent'));
  }

  /** Closes transports, transactions and dialogs (no BYE is sent). Safe to call twice. */
  /** A renewed certificate for the TLS and WSS listeners (new connections get it). */
  setCertificate(pem: { cert: string; key: string }): void {
    this.#transport.setCertificate(pem);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const d of [...this.#dialogs.values()]) d.terminate('closed');
    for (const w of this.#ackWaiters.values()) w.reject(new SipStateError('user agent closed'));
    this.#tx.close();
    await this.#transport.close();
  }
}

function ackKey(req: SipRequest): string {
  return `${req.callId}|${req.cseq.seq}`;
}

function stripTag(party: string): string {
  return party.replace(/;\s*tag=[^;]*/i, '');
}

function resolveOutbound(proxy: Outbound | undefined, uri: Uri): Target {
  if (proxy === undefined) return targetForUri(uri);
  if (typeof proxy !== 'string') return proxy;
  const u = parseUri(proxy.startsWith('sip') ? proxy : `sip:${proxy}`);
  if (!u || !isSipUri(u)) throw new SipStateError(`bad outbound proxy ${proxy}`);
  return targetForUri(u);
}
