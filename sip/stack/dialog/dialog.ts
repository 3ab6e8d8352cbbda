/**
 * A dialog (RFC 3261 §12): its identity, sequence numbers, route set and remote target; building and sending
 * in-dialog requests (§12.2.1) and checking received ones (§12.2.2). Events: 'bye' when the peer hangs up,
 * 'destroy' whichever side ends it, 'modify' for a re-INVITE or UPDATE with a body, 'info', 'refer' (RFC 3515),
 * 'request' for the rest.
 */
import { SipDialogTerminatedError, SipResponseError } from '../errors.js';
import { TypedEmitter } from '../../../kit/index.js';
import {
  applyHeaders,
  FrozenMessage,
  formatUri,
  isSipUri,
  parseNameAddr,
  SipHeaders,
  SipRequest,
  type HeaderInit,
  type SipResponse,
  type TransportName,
  type Uri,
} from '../message/index.js';
import type { Target } from '../transport/index.js';
import type { Responder } from '../core/responder.js';
import type { Clock } from '../clock.js';
import { SessionTimer, supports } from './session-timer.js';

/** What a dialog needs from the user agent that owns it. */
export interface DialogHost {
  /** Sends a request in a client transaction; resolves with the final response. */
  send(req: SipRequest, target: Target): Promise<SipResponse>;
  /** Sends an ACK for a 2xx (§13.2.2.4: no transaction). */
  sendAck(ack: SipRequest, target: Target): void;
  /** The ACK of `invite`'s 2xx was sent: `resendAck` answers each retransmitted 2xx until Timer M (§13.2.2.4). */
  acknowledged?(invite: SipRequest, resendAck: (res: SipResponse) => void): void;
  /** A Via header value with a fresh branch for `transport`. */
  via(transport: TransportName): string;
  contact(transport: TransportName): string;
  forget(dialog: Dialog): void;
}

export interface DialogEvents extends Record<string, unknown[]> {
  bye: [req: SipRequest];
  destroy: [reason: 'remote-bye' | 'local-bye' | 'ack-timeout' | 'closed'];
  /** A re-INVITE or UPDATE with SDP. Answer with srv.send(200, ..., {body}); unanswered ones get 200 with localSdp. */
  modify: [req: SipRequest, srv: Responder];
  info: [req: SipRequest, srv: Responder];
  /** A REFER (RFC 3515): answer 202 and report with a ReferSubscription (refer.ts); unheard ones get 501. */
  refer: [req: SipRequest, srv: Responder];
  /** Any other in-dialog request (NOTIFY, MESSAGE, OPTIONS). */
  request: [req: SipRequest, srv: Responder];
  /**
   * RFC 4028: the session timer ran out (the peer, as refresher, sent no refresh in time; or our refresh failed).
   * The listener ends the call (BYE); with none, the dialog sends BYE itself.
   */
  'session-expired': [why: 'no-refresh' | 'refresh-failed'];
}

export interface DialogInit {
  role: 'uac' | 'uas';
  callId: string;
  localTag: string;
  remoteTag: string;
  /** The From (UAC) or To (UAS) header value of our side, without its tag. */
  localParty: string;
  remoteParty: string;
  localSeq: number;
  remoteSeq: number | undefined;
  remoteTarget: Uri;
  /** Route header values in the order requests carry them (§12.1.1, §12.1.2). */
  routeSet: string[];
  transport: TransportName;
  flowId?: string;
  /**
   * For a UDP dialog: where every in-dialog request goes, whatever the remote target and route set name (they
   * are still written into the request). The user agent sets it to the address and port the dialog was learned
   * from when its application does not trust the peer to name a next hop (see UserAgentOptions.pinUdpDialogs).
   */
  pinnedPeer?: { host: string; port: number };
  localSdp?: string;
  remoteSdp?: string;
  createdAt?: number;
}

export type DialogState = 'early' | 'confirmed' | 'terminated';

export class Dialog extends TypedEmitter<DialogEvents> {
  readonly role: 'uac' | 'uas';
  readonly callId: string;
  readonly localTag: string;
  readonly remoteTag: string;
  readonly #host: DialogHost;
  #state: DialogState = 'confirmed';
  #localSeq: number;
  #remoteSeq: number | undefined;
  #remoteTarget: Uri;
  readonly #routeSet: string[];
  readonly #localParty: string;
  readonly #remoteParty: string;
  readonly transport: TransportName;
  readonly flowId?: string;
  readonly pinnedPeer?: { host: string; port: number };
  /** When the dialog was made, on the host's clock (ms). */
  readonly createdAt: number;
  localSdp?: string;
  remoteSdp?: string;
  /** The RFC 4028 session timer, once started (startSessionTimer). */
  sessionTimer?: SessionTimer;
  #minSe = 90;

  constructor(host: DialogHost, init: DialogInit) {
    super();
    this.#host = host;
    this.role = init.role;
    this.callId = init.callId;
    this.localTag = init.localTag;
    this.remoteTag = init.remoteTag;
    this.#localParty = init.localParty;
    this.#remoteParty = init.remoteParty;
    this.#localSeq = init.localSeq;
    this.#remoteSeq = init.remoteSeq;
    this.#remoteTarget = init.remoteTarget;
    this.#routeSet = init.routeSet;
    this.transport = init.transport;
    this.flowId = init.flowId;
    this.pinnedPeer = init.transport === 'UDP' ? init.pinnedPeer : undefined;
    this.createdAt = init.createdAt ?? Date.now();
    this.localSdp = init.localSdp;
    this.remoteSdp = init.remoteSdp;
  }

  /** Call-ID, local tag, remote tag (§12: the dialog ID). */
  get id(): string {
    return Dialog.key(this.callId, this.localTag, this.remoteTag);
  }

  static key(callId: string, localTag: string, remoteTag: string): string {
    return `${callId}|${localTag}|${remoteTag}`;
  }

  get state(): DialogState {
    return this.#state;
  }

  get remoteTarget(): Uri {
    return this.#remoteTarget;
  }

  /** The next hop for in-dialog requests: the first route if any (loose routing, §12.2.1.1), else the target. */
  #target(): Target {
    // A pinned UDP dialog ignores the peer's Contact and Record-Route for the destination: a phone cannot make
    // the switch send its BYEs, re-INVITEs and NOTIFYs to a host of its choosing.
    if (this.pinnedPeer) return { transport: 'UDP', host: this.pinnedPeer.host, port: this.pinnedPeer.port };
    const first = this.#routeSet[0];
    const uri = first ? (parseNameAddr(first)?.uri ?? this.#remoteTarget) : this.#remoteTarget;
    return targetForUri(uri, this.transport, this.flowId);
  }

  /** Builds an in-dialog request (§12.2.1.1): CSeq one above the last, except ACK and CANCEL. */
  createRequest(method: string, opts: { headers?: HeaderInit; body?: string | Buffer; contentType?: string } = {}) {
    const h = new SipHeaders();
    h.append('via', this.#host.via(this.transport));
    h.append('max-forwards', '70');
    for (const r of this.#routeSet) h.append('route', r);
    h.append('from', `${this.#localParty};tag=${this.localTag}`);
    h.append('to', `${this.#remoteParty};tag=${this.remoteTag}`);
    h.append('call-id', this.callId);
    if (method !== 'ACK' && method !== 'CANCEL') this.#localSeq++;
    h.append('cseq', `${this.#localSeq} ${method}`);
    // RFC 6665 §8.1.2 wants a Contact in NOTIFY too (a REFER's subscription, RFC 3515).
    if (method === 'INVITE' || method === 'UPDATE' || method === 'NOTIFY' || method === 'REFER')
      h.append('contact', this.#host.contact(this.transport));
    applyHeaders(h, opts.headers);
    const req = new SipRequest(method, this.#remoteTarget, h, opts.body);
    if (opts.body !== undefined && !h.has('content-type')) h.set('content-type', opts.contentType ?? 'application/sdp');
    return req;
  }

  /** Sends an in-dialog request and resolves with its final response (any status). */
  async request(
    method: string,
    opts: { headers?: HeaderInit; body?: string | Buffer; contentType?: string } = {},
  ): Promise<SipResponse> {
    if (this.#state === 'terminated') throw new SipDialogTerminatedError();
    const req = this.createRequest(method, opts);
    const target = this.#target();
    const res = await this.#host.send(req, target);
    if (method === 'INVITE' && res.status >= 200 && res.status < 300) {
      // §13.2.2.4: the ACK of a re-INVITE's 2xx, again for each retransmission of it, and a target refresh
      // (§12.2.1.2). Without the resend a peer whose ACK was lost retransmitted its 2xx until Timer L and then ended
      // the call.
      const ack = this.acknowledge(req.cseq.seq);
      this.#host.acknowledged?.(req, this.ackResender(ack));
      this.#refreshTarget(res.contact?.uri);
    }
    return res;
  }

  /** §13.2.2.4: the ACK for a 2xx to the INVITE with CSeq `inviteSeq`, sent without a transaction. */
  acknowledge(inviteSeq: number): SipRequest {
    const ack = this.createRequest('ACK');
    ack.headers.set('cseq', `${inviteSeq} ACK`);
    this.#host.sendAck(ack, this.#target());
    return ack;
  }

  /**
   * Resends `ack` to where it went, without this dialog: what an INVITE client transaction keeps for retransmitted
   * 2xx while it lingers (Timer M, 32 s), so that the ended call's dialog and all it holds are not kept that long.
   */
  ackResender(ack: SipRequest): () => void {
    const host = this.#host;
    const target = this.#target();
    // Kept as its bytes (and Call-ID, for the log of a failed send): the parsed ACK is a few KB of objects.
    const frozen = Object.assign(new FrozenMessage(ack.toBuffer()), { callId: ack.callId });
    return () => host.sendAck(frozen as unknown as SipRequest, target);
  }

  /** A re-INVITE with new SDP; resolves with the remote SDP, rejects with SipResponseError on non-2xx. */
  async modify(sdp: string): Promise<string | undefined> {
    const res = await this.request('INVITE', { body: sdp });
    if (res.status >= 300) throw new SipResponseError(res.status, res.reason);
    this.localSdp = sdp;
    if (res.body.length > 0) this.remoteSdp = res.text;
    return this.remoteSdp;
  }

  /** Ends the dialog with BYE (§15.1.1). Safe to call twice; a dead peer does not make it throw. */
  async bye(headers?: HeaderInit): Promise<void> {
    if (this.#state === 'terminated') return;
    const req = this.createRequest('BYE', { headers });
    this.#end('local-bye');
    await this.#host.send(req, this.#target()).catch(() => undefined);
  }

  /**
   * Starts the RFC 4028 session timer for `seconds` with the refresher agreed ('local': we re-INVITE every half
   * interval; 'remote': the peer must, or 'session-expired' fires). Refreshes from the peer restart it.
   */
  startSessionTimer(clock: Clock, agreed: { seconds: number; refresher: 'local' | 'remote' }, minSe: number): void {
    this.sessionTimer?.stop();
    this.#minSe = minSe;
    const peerRole = this.role === 'uas' ? 'uac' : 'uas';
    const headers = (seconds: number, refresher: 'local' | 'remote') => ({
      'Session-Expires': `${seconds};refresher=${refresher === 'local' ? this.role : peerRole}`,
    });
    this.sessionTimer = new SessionTimer(this, clock, agreed, headers);
  }

  /** The session timer ran out (SessionTimer calls it). */
  sessionExpired(why: 'no-refresh' | 'refresh-failed'): void {
    if (!this.safeEmit('session-expired', why)) void this.bye();
  }

  /** §12.2.2: an in-dialog request from the peer; returns the status to reject it with, or null to accept. */
  checkSequence(req: SipRequest): number | null {
    if (req.method === 'ACK' || req.method === 'CANCEL') return null;
    const seq = req.cseq.seq;
    if (this.#remoteSeq !== undefined && seq <= this.#remoteSeq) return 500; // §12.2.2: lower CSeq, 500
    this.#remoteSeq = seq;
    return null;
  }

  /** Called by the user agent for each in-dialog request that passed `checkSequence`. */
  receive(req: SipRequest, srv: Responder): void {
    switch (req.method) {
      case 'BYE':
        srv.send(200);
        this.#end('remote-bye', req);
        return;
      case 'INVITE':
      case 'UPDATE':
        if (this.sessionTimer) {
          const h = this.sessionTimer.refreshedBy(req, this.#minSe, this.role);
          srv.addSuccessHeaders(supports(req, 'timer') ? { ...h, Require: 'timer' } : h);
        }
        this.#refreshTarget(req.contact?.uri);
        if (req.body.length > 0) this.remoteSdp = req.text;
        if (!this.safeEmit('modify', req, srv)) this.#answerWithSdp(srv);
        return;
      case 'INFO':
        if (!this.safeEmit('info', req, srv)) srv.send(200);
        return;
      case 'REFER':
        if (!this.safeEmit('refer', req, srv)) srv.send(501);
        return;
      case 'ACK':
        return;
      default:
        if (!this.safeEmit('request', req, srv)) srv.send(req.method === 'OPTIONS' ? 200 : 501);
    }
  }

  #answerWithSdp(srv: Responder): void {
    srv.send(
      200,
      undefined,
      this.localSdp ? { body: this.localSdp, headers: { 'Content-Type': 'application/sdp' } } : {},
    );
  }

  #refreshTarget(uri: Uri | undefined): void {
    if (uri) this.#remoteTarget = uri;
  }

  /** Marks the dialog ended without sending anything (the peer is gone, the stack is closing). */
  terminate(reason: 'ack-timeout' | 'closed'): void {
    this.#end(reason);
  }

  #end(reason: DialogEvents['destroy'][0], byeReq?: SipRequest): void {
    if (this.#state === 'terminated') return;
    this.#state = 'terminated';
    this.sessionTimer?.stop();
    this.#host.forget(this);
    if (byeReq) this.safeEmit('bye', byeReq);
    this.safeEmit('destroy', reason);
  }
}

/** The transport, host and port a URI resolves to (RFC 3263 §4 without DNS: transport param, sips, defaults). */
export function targetForUri(uri: Uri, fallback: TransportName = 'UDP', flowId?: string): Target {
  if (!isSipUri(uri)) return { transport: fallback, host: formatUri(uri), port: 5060, flowId };
  let param = uri.params.get('transport')?.toUpperCase();
  // RFC 7118 §5: `transport=ws` names WebSocket, secure or not; on a WSS flow it means that flow.
  if (param === 'WS' && fallback === 'WSS') param = 'WSS';
  const transport = (
    param && ['UDP', 'TCP', 'TLS', 'WS', 'WSS'].includes(param) ? param : uri.scheme === 'sips' ? 'TLS' : fallback
  ) as TransportName;
  const host = uri.host.replace(/^\[|\]$/g, '');
  const port = uri.port ?? (transport === 'TLS' || transport === 'WSS' ? 5061 : 5060);
  return { transport, host, port, flowId: transport === fallback ? flowId : undefined };
}
