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
import { ConnectionTransport, type GuardOptions } from './connection-transport.js';
import { connectionFlow, type Flow, type ListenAddress, type SecureListenAddress, type TransportSink } from './flow.js';

export interface WsOptions extends GuardOptions {
  maxBytes: number;
  pingMs: number;
}

export class WsTransport extends ConnectionTransport<'WS' | 'WSS'> {
  readonly #wss: WebSocketServer;
  readonly #sockets = new Set<WebSocket>();
  readonly #maxBytes: number;
  /** Sockets that answered (or had no) ping since the last round. */
  readonly #alive = new WeakSet<WebSocket>();
  readonly #pinger: NodeJS.Timeout;

  private constructor(name: 'WS' | 'WSS', sink: TransportSink, o: WsOptions, secure?: SecureListenAddress) {
    const server = secure ? https.createServer({ cert: secure.cert, key: secure.key }) : http.createServer();
    super(name, sink, server, o);
    this.#maxBytes = o.maxBytes;
    this.#pinger = setInterval(() => this.#pingAll(), o.pingMs);
    this.#pinger.unref();
    this.#wss = new WebSocketServer({
      server,
      maxPayload: o.maxBytes,
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
    await t.bind(addr);
    return t;
  }

  /** Opens a WebSocket to a peer (a WS trunk); a browser client's flow is normally reused instead. */
  protected async open(address: string, port: number): Promise<Flow> {
    const scheme = this.name === 'WSS' ? 'wss' : 'ws';
    const ws = new WebSocket(`${scheme}://${address}:${port}`, 'sip', { maxPayload: this.#maxBytes });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
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
    const closed = this.opened(flow, remoteKey);
    let accepted = remoteKey === undefined ? this.guard.entryFor(socket) : undefined;
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      accepted?.seen(); // one frame is one complete message (RFC 7118 §5)
      accepted = undefined;
      const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      this.sink.receive(buf, source);
    });
    ws.on('error', () => {});
    ws.on('close', () => {
      this.#sockets.delete(ws);
      closed();
    });
    return flow;
  }

  async close(): Promise<void> {
    clearInterval(this.#pinger);
    for (const ws of this.#sockets) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
