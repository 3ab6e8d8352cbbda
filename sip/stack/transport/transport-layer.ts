/**
 * The transport layer (RFC 3261 §18): listens on the configured transports, parses what arrives, stamps
 * `received`/`rport` on requests (§18.2.1, RFC 3581 §4), answers unparseable requests statelessly (400/505),
 * and gives the transaction layer channels: to a target for requests, back along the request's path for
 * responses (§18.2.2).
 */
import net from 'node:net';
import { SipTransportError, SipStateError } from '../errors.js';
import type { Logger } from '../logger.js';
import {
  createResponse,
  parseMessage,
  SipRequest,
  type MessageSource,
  type ParseLimits,
  type SipMessage,
  type TransportName,
} from '../message/index.js';
import type { MessageChannel } from '../transaction/index.js';
import type { Flow, ListenAddress, SecureListenAddress, Transport, TransportSink } from './flow.js';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits, type SourceAdmission } from './guard.js';
import { StreamTransport } from './stream-transport.js';
import { UdpTransport } from './udp-transport.js';
import type { UdpFront, UdpFrontOptions } from './udp-front.js';
import { WsTransport } from './ws-transport.js';
import { isStun, stunBindingResponse } from './stun.js';
import { tapTime, type MessageTap } from './tap.js';

export interface ListenOptions {
  udp?: ListenAddress;
  /** A worker thread receives the UDP port and refuses new INVITEs beyond the published gate (udp-front.ts). */
  udpFront?: UdpFrontOptions;
  tcp?: ListenAddress;
  tls?: SecureListenAddress;
  ws?: ListenAddress;
  wss?: SecureListenAddress;
  /** WebSocket ping interval; a peer that misses a pong is dropped and its flow closed (default 30 s). */
  wsPingMs?: number;
}

/** Where to send a request: a transport, a host and port, and optionally a flow to reuse. */
export interface Target {
  transport: TransportName;
  host: string;
  port: number;
  flowId?: string;
}

export interface TransportLayerOptions {
  logger: Logger;
  limits: ParseLimits;
  keepAliveMs: number;
  tlsRejectUnauthorized?: boolean;
  tlsCa?: string | Buffer;
  onMessage(message: SipMessage): void;
  /**
   * Asked with the source IP before anything it sent is parsed: false drops a datagram unread and closes a
   * connection (at accept, or when the source is refused later). The application's ban list plugs in here.
   */
  admitSource?: SourceAdmission;
  /** Inbound connection caps and first-message deadline for TCP, TLS, WS and WSS (defaults in guard.ts). */
  connectionLimits?: Partial<ConnectionLimits>;
  /** A connection (TCP, TLS, WS, WSS) closed, whoever closed it. */
  onFlowClosed?(flowId: string): void;
  /** Given every SIP message received and sent (tap.ts), for capture. */
  tap?: MessageTap;
}

export class TransportLayer implements TransportSink {
  readonly #opts: TransportLayerOptions;
  readonly #transports = new Map<TransportName, Transport>();
  readonly #flows = new Map<string, Flow>();
  #closed = false;

  constructor(opts: TransportLayerOptions) {
    this.#opts = opts;
  }

  async listen(opts: ListenOptions): Promise<void> {
    if (this.#closed) throw new SipStateError('transport layer closed');
    const o = this.#opts;
    const limits = { ...DEFAULT_CONNECTION_LIMITS, ...o.connectionLimits };
    const stream = {
      limits,
      admitSource: o.admitSource,
      maxMessageBytes: o.limits.maxMessageBytes,
      keepAliveMs: o.keepAliveMs,
      rejectUnauthorized: o.tlsRejectUnauthorized,
      ca: o.tlsCa,
    };
    if (opts.udp) this.#transports.set('UDP', await UdpTransport.listen(opts.udp, this, opts.udpFront));
    if (opts.tcp) this.#transports.set('TCP', await StreamTransport.listen('TCP', opts.tcp, this, stream));
    if (opts.tls) this.#transports.set('TLS', await StreamTransport.listen('TLS', opts.tls, this, stream));
    const ws = {
      maxBytes: o.limits.maxMessageBytes,
      pingMs: opts.wsPingMs ?? 30_000,
      limits,
      admitSource: o.admitSource,
    };
    if (opts.ws) this.#transports.set('WS', await WsTransport.listen('WS', opts.ws, this, ws));
    if (opts.wss) this.#transports.set('WSS', await WsTransport.listen('WSS', opts.wss, this, ws));
  }

  /** The bound address of a transport (for Via and Contact). */
  local(transport: TransportName): ListenAddress | undefined {
    return this.#transports.get(transport)?.local;
  }

  /** The UDP front, when one was asked for and the kernel delivers the port's datagrams to it. */
  get udpFront(): UdpFront | undefined {
    return (this.#transports.get('UDP') as UdpTransport | undefined)?.front;
  }

  has(transport: TransportName): boolean {
    return this.#transports.has(transport);
  }

  flowOpened(flow: Flow): void {
    this.#flows.set(flow.id, flow);
  }

  flowClosed(flow: Flow): void {
    this.#flows.delete(flow.id);
    this.#opts.logger.debug({ flow: flow.id }, 'flow closed');
    if (!this.#closed) this.#opts.onFlowClosed?.(flow.id);
  }

  isFlowOpen(flowId: string): boolean {
    return this.#flows.has(flowId) || flowId.startsWith('udp:');
  }

  receive(data: Buffer, source: MessageSource): void {
    if (this.#closed) return;
    // A UDP keep-alive (RFC 5626 §4.4.2 uses STUN; bare CRLFs are common) is not a message.
    if (data.length <= 4 && /^[\r\n]*$/.test(data.toString('latin1'))) return;
    // A refused (banned) source costs no parsing; a connection of one that was refused since it opened is closed.
    if (this.#opts.admitSource && !this.#opts.admitSource(source.address, source.transport)) {
      if (source.transport !== 'UDP') this.#flows.get(source.flowId)?.close();
      return;
    }
    if (source.transport === 'UDP' && isStun(data)) {
      // RFC 5626 §4.4.2: a phone's STUN keep-alive on the SIP port gets its Binding response; nothing else of STUN.
      const res = stunBindingResponse(data, source.address, source.port);
      if (res) {
        this.channelTo({ transport: 'UDP', host: source.address, port: source.port })
          .send({ toBuffer: () => res } as unknown as SipMessage)
          .catch(() => {});
      }
      return;
    }
    if (this.#opts.tap) tapIn(this.#opts.tap, data, source);
    const result = parseMessage(data, this.#opts.limits);
    if (!result.ok) {
      this.#opts.logger.debug({ source, reason: result.error.message }, 'unparseable message');
      if (result.request) {
        // §8.2 / §16.3: a malformed request that can still be answered gets a stateless response.
        result.request.source = source;
        const res = createResponse(result.request, result.error.status, undefined, 'malformed');
        this.responseChannel(result.request)
          .send(res)
          .catch(() => {});
      }
      return;
    }
    const msg = result.message;
    msg.source = source;
    if (msg instanceof SipRequest) stampReceived(msg, source);
    this.#opts.onMessage(msg);
  }

  /** A channel for a request to `target`, reusing a flow when one is named or already open to that peer. */
  channelTo(target: Target): MessageChannel {
    return new TargetChannel(this.#transports.get(target.transport), this.#flows, target, this.#opts.tap);
  }

  /**
   * §18.2.2: over a reliable transport the response goes back on the request's connection (and a dead
   * connection is an error); over UDP to the source address, at the rport if the client asked for it
   * (RFC 3581 §4), else at the port of the Via sent-by.
   */
  responseChannel(req: SipRequest): MessageChannel {
    const src = req.source;
    if (!src) throw new SipStateError('response channel for a request without a source');
    if (src.transport !== 'UDP') return new FlowChannel(this.#flows, src, this.#opts.tap);
    // An unreadable Via (a malformed request being answered 400) is answered symmetrically, as with rport.
    const via = req.topVia;
    const port = !via || via.params.has('rport') ? src.port : (via.port ?? 5060);
    return this.channelTo({ transport: 'UDP', host: src.address, port });
  }

  /** A renewed certificate for the TLS and WSS listeners: new connections get it, open ones go on. */
  setCertificate(pem: { cert: string; key: string }): void {
    for (const name of ['TLS', 'WSS'] as const) {
      const t = this.#transports.get(name) as { setCertificate?(pem: { cert: string; key: string }): void } | undefined;
      t?.setCertificate?.(pem);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#transports.values()].map((t) => t.close()));
    this.#transports.clear();
    this.#flows.clear();
  }
}

/** §18.2.1 and RFC 3581 §4: note the source address (and port, when rport was asked for) in the top Via. */
function stampReceived(req: SipRequest, src: MessageSource): void {
  const raw = req.headers.get('via');
  const via = req.topVia;
  if (!raw || !via) return;
  let extra = '';
  if (via.host.replace(/^\[|\]$/g, '') !== src.address || !net.isIP(via.host.replace(/^\[|\]$/g, ''))) {
    if (!via.params.has('received')) extra += `;received=${src.address}`;
  }
  let value = raw;
  if (via.params.has('rport') && via.params.get('rport') === null) {
    value = value.replace(/;\s*rport(?=\s*(;|$))/i, `;rport=${src.port}`);
  }
  if (extra || value !== raw) req.headers.set('via', [value + extra, ...req.headers.getAll('via').slice(1)]);
}

/*
 * Channels are classes rather than object literals with closures: a channel is made for every request and response
 * sent, and a closure per send is renamed by the TypeScript loader's keep-names helper each time, a cost on every
 * message.
 */

/** To a target: the named flow, or one the transport opens (or already has) to that peer. */
class TargetChannel implements MessageChannel {
  readonly reliable: boolean;
  constructor(
    private readonly transport: Transport | undefined,
    private readonly flows: Map<string, Flow>,
    private readonly target: Target,
    private readonly tap: MessageTap | undefined,
  ) {
    this.reliable = target.transport !== 'UDP';
  }

  send(msg: SipMessage): Promise<void> {
    // Not async: a UDP send (most of what a registrar sends) needs no connection, and goes without the promises
    // and turns of awaiting one. Every failure is still a rejection, never a throw.
    try {
      const { target } = this;
      if (!this.transport) throw new SipTransportError(`no ${target.transport} transport listening`);
      let flow = target.flowId ? this.flows.get(target.flowId) : undefined;
      if (target.flowId && !flow && this.reliable && target.transport.startsWith('WS')) {
        throw new SipTransportError(`connection ${target.flowId} is closed`);
      }
      flow ??= this.transport.flow?.(target.host, target.port);
      if (flow) return sendOn(flow, msg.toBuffer(), this.tap);
      return this.transport.connect(target.host, target.port).then((f) => sendOn(f, msg.toBuffer(), this.tap));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
}

/** Back on the connection a request came in on (a reliable transport); a closed connection is an error. */
class FlowChannel implements MessageChannel {
  readonly reliable = true;
  constructor(
    private readonly flows: Map<string, Flow>,
    private readonly source: MessageSource,
    private readonly tap: MessageTap | undefined,
  ) {}

  async send(msg: SipMessage): Promise<void> {
    const flow = this.flows.get(this.source.flowId);
    if (!flow) throw new SipTransportError(`${this.source.transport} connection ${this.source.flowId} is closed`);
    await sendOn(flow, msg.toBuffer(), this.tap);
  }
}

/** Sends a message's bytes on a flow, tapping them first; STUN responses and keep-alives are not SIP and pass by. */
function sendOn(flow: Flow, data: Buffer, tap: MessageTap | undefined): Promise<void> {
  if (tap && data.length > 4 && !isStun(data)) {
    try {
      tap({
        direction: 'out',
        transport: flow.transport,
        data,
        localAddress: flow.localAddress,
        localPort: flow.localPort,
        remoteAddress: flow.remoteAddress,
        remotePort: flow.remotePort,
        at: tapTime(),
      });
    } catch {
      /* capture never fails a send */
    }
  }
  return flow.send(data);
}

function tapIn(tap: MessageTap, data: Buffer, source: MessageSource): void {
  try {
    tap({
      direction: 'in',
      transport: source.transport,
      data,
      localAddress: source.localAddress ?? '',
      localPort: source.localPort ?? 0,
      remoteAddress: source.address,
      remotePort: source.port,
      at: tapTime(),
    });
  } catch {
    /* capture never fails a receive */
  }
}
