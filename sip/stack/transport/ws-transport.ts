/**
 * SIP over WebSocket and secure WebSocket (RFC 7118): subprotocol `sip`, one SIP message per frame, so no
 * Content-Length framing. Flows are the WebSocket connections. Every `pingMs` each connection is pinged; one
 * that has not answered the previous ping is terminated, so a browser that vanished (lost network, suspended
 * laptop) closes its flow within two intervals and its registrations go with it.
 */
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { SipTransportError } from '../errors.js';
import {
  connectionFlow,
  listenOn,
  type Flow,
  type ListenAddress,
  type SecureListenAddress,
  type Transport,
  type TransportSink,
} from './flow.js';
import { ConnectionGuard, DEFAULT_CONNECTION_LIMITS, type ConnectionLimits, type SourceAdmission } from './guard.js';

export interface WsOptions {
  maxBytes: number;
  pingMs: number;
  /** Inbound connection caps and the first-message deadline (guard.ts). */
  limits?: ConnectionLimits;
  /** Asked at accept: a refused source's connection is closed before TLS, the HTTP upgrade or any parsing. */
  admitSource?: SourceAdmission;
}

export class WsTransport implements Transport {
  readonly name: 'WS' | 'WSS';
  readonly #http: http.Server | https.Server;
  readonly #wss: WebSocketServer;
  readonly #sink: TransportSink;
  readonly #sockets = new Set<WebSocket>();
  readonly #byRemote = new Map<string, Flow>();
  readonly #maxBytes: number;
  /** Sockets that answered (or had no) ping since the last round. */
  readonly #alive = new WeakSet<WebSocket>();
  readonly #pinger: NodeJS.Timeout;
  readonly guard: ConnectionGuard;
  local: ListenAddress = { host: '', port: 0 };

  private constructor(name: 'WS' | 'WSS', sink: TransportSink, o: WsOptions, secure?: SecureListenAddress) {
    this.name = name;
    this.#sink = sink;
    this.#maxBytes = o.maxBytes;
    const maxBytes = o.maxBytes;
    this.#pinger = setInterval(() => this.#pingAll(), o.pingMs);
    this.#pinger.unref();
    this.#http = secure ? https.createServer({ cert: secure.cert, key: secure.key }) : http.createServer();
    this.guard = new ConnectionGuard(name, o.limits ?? DEFAULT_CONNECTION_LIMITS, o.admitSource);
    // The raw TCP socket, before TLS and the HTTP upgrade: refused sources cost neither.
    this.#http.prependListener('connection', (raw: net.Socket) => void this.guard.accept(raw));
    this.#http.on('error', () => {});
    this.#wss = new WebSocketServer({
      server: this.#http,
      maxPayload: maxBytes,
      // RFC 7118 §4.1: the `sip` subprotocol is required.
      handleProtocols: (protocols) => (protocols.has('sip') ? 'sip' : false),
    });
    this.#wss.on('connection', (ws, req) => this.#attach(ws, req.socket));
  }

  static async listen(
    name: 'WS' | 'WSS',
    addr: ListenAddress | SecureListenAddress,
    sink: TransportSink,
    o: WsOptions,
  ): Promise<WsTransport> {
    const t = new WsTransport(name, sink, o, name === 'WSS' ? (addr as SecureListenAddress) : undefined);
    t.local = await listenOn(t.#http, addr);
    return t;
  }

  /** Opens a WebSocket to a peer (a WS trunk); a browser client's flow is normally reused instead. */
  /** A new certificate for connections accepted from now on (WSS); connections already open keep theirs. */
  setCertificate(pem: { cert: string; key: string }): void {
    if (this.#http instanceof https.Server) this.#http.setSecureContext({ cert: pem.cert, key: pem.key });
  }

  async connect(address: string, port: number): Promise<Flow> {
    const existing = this.#byRemote.get(`${address}:${port}`);
    if (existing) return existing;
    const scheme = this.name === 'WSS' ? 'wss' : 'ws';
    const ws = new WebSocket(`${scheme}://${address}:${port}`, 'sip', { maxPayload: this.#maxBytes });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (e) =>
        reject(new SipTransportError(`${this.name} connect to ${address}:${port}: ${e.message}`)),
      );
    });
    return this.#attach(ws, (ws as unknown as { _socket: net.Socket })._socket, `${address}:${port}`);
  }

  #pingAll(): void {
    for (const ws of this.#sockets) {
      if (!this.#alive.has(ws)) {
        ws.terminate(); // no pong since the last ping: the peer is gone
        continue;
      }
      this.#alive.delete(ws);
      if (ws.readyState === WebSocket.OPEN) ws.ping();
    }
  }

  #attach(ws: WebSocket, socket: net.Socket, remoteKey?: string): Flow {
    this.#sockets.add(ws);
    this.#alive.add(ws);
    ws.on('pong', () => this.#alive.add(ws));
    const { flow, source } = connectionFlow(this.name, socket, {
      isOpen: () => ws.readyState === WebSocket.OPEN,
      // RFC 7118 §5: text frames for UTF-8 messages.
      write: (data, done) => ws.send(data.toString('utf8'), done),
      close: () => ws.close(),
    });
    const key = remoteKey ?? `${flow.remoteAddress}:${flow.remotePort}`;
    this.#byRemote.set(key, flow);
    let accepted = remoteKey === undefined ? this.guard.entryFor(socket) : undefined;
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      accepted?.seen(); // one frame is one complete message (RFC 7118 §5)
      accepted = undefined;
      const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      this.#sink.receive(buf, source);
    });
    ws.on('error', () => {});
    ws.on('close', () => {
      this.#sockets.delete(ws);
      if (this.#byRemote.get(key) === flow) this.#byRemote.delete(key);
      this.#sink.flowClosed(flow);
    });
    this.#sink.flowOpened(flow);
    return flow;
  }

  async close(): Promise<void> {
    clearInterval(this.#pinger);
    for (const ws of this.#sockets) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }
}
