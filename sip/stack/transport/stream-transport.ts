/**
 * TCP and TLS (RFC 3261 §18, §26.2): one flow per connection, messages framed by Content-Length with
 * `StreamFramer`, CRLF keep-alive answered (RFC 5626 §4.4.1), connections reused for responses and for
 * later requests to the same peer.
 */
import net from 'node:net';
import tls from 'node:tls';
import { SipTransportError } from '../errors.js';
import { StreamFramer } from '../message/index.js';
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

export interface StreamTransportOptions {
  maxMessageBytes: number;
  /** Send a CRLFCRLF ping on connections we opened, every this many ms (0: never). */
  keepAliveMs: number;
  /** For TLS client connections: verify the peer certificate (default true). */
  rejectUnauthorized?: boolean;
  ca?: string | Buffer;
  /** Inbound connection caps and the first-message deadline (guard.ts). */
  limits?: ConnectionLimits;
  /** Asked at accept: a refused source's connection is closed before TLS or any parsing. */
  admitSource?: SourceAdmission;
}

export class StreamTransport implements Transport {
  readonly name: 'TCP' | 'TLS';
  readonly #server: net.Server;
  readonly #sink: TransportSink;
  readonly #opts: StreamTransportOptions;
  readonly #byRemote = new Map<string, Flow>();
  readonly #sockets = new Set<net.Socket>();
  readonly guard: ConnectionGuard;
  local: ListenAddress = { host: '', port: 0 };

  private constructor(
    name: 'TCP' | 'TLS',
    sink: TransportSink,
    opts: StreamTransportOptions,
    secure?: SecureListenAddress,
  ) {
    this.name = name;
    this.#sink = sink;
    this.#opts = opts;
    this.guard = new ConnectionGuard(name, opts.limits ?? DEFAULT_CONNECTION_LIMITS, opts.admitSource);
    const onSocket = (s: net.Socket) => void (s.destroyed || this.#attach(s, false)); // destroyed: refused
    this.#server = secure
      ? tls.createServer({ cert: secure.cert, key: secure.key }, onSocket)
      : net.createServer(onSocket);
    // 'connection' is the raw TCP socket, before a TLS handshake: refused sources cost no handshake.
    this.#server.prependListener('connection', (raw: net.Socket) => void this.guard.accept(raw));
    this.#server.on('error', () => {});
  }

  static async listen(
    name: 'TCP' | 'TLS',
    addr: ListenAddress | SecureListenAddress,
    sink: TransportSink,
    opts: StreamTransportOptions,
  ): Promise<StreamTransport> {
    const t = new StreamTransport(name, sink, opts, name === 'TLS' ? (addr as SecureListenAddress) : undefined);
    t.local = await listenOn(t.#server, addr);
    return t;
  }

  /** A new certificate for connections accepted from now on (TLS); connections already open keep theirs. */
  setCertificate(pem: { cert: string; key: string }): void {
    if (this.#server instanceof tls.Server) this.#server.setSecureContext({ cert: pem.cert, key: pem.key });
  }

  async connect(address: string, port: number): Promise<Flow> {
    const existing = this.#byRemote.get(`${address}:${port}`);
    if (existing) return existing;
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s =
        this.name === 'TLS'
          ? tls.connect({
              host: address,
              port,
              servername: net.isIP(address) ? undefined : address,
              rejectUnauthorized: this.#opts.rejectUnauthorized ?? true,
              ca: this.#opts.ca,
            })
          : net.connect({ host: address, port });
      const ready = this.name === 'TLS' ? 'secureConnect' : 'connect';
      s.once(ready, () => {
        s.off('error', reject);
        resolve(s);
      });
      s.once('error', (e) => reject(new SipTransportError(`${this.name} connect to ${address}:${port}: ${e.message}`)));
    });
    return this.#attach(socket, true);
  }

  #attach(socket: net.Socket, outbound: boolean): Flow {
    socket.setNoDelay(true);
    this.#sockets.add(socket);
    let open = true;
    const { flow, source } = connectionFlow(this.name, socket, {
      isOpen: () => open && !socket.destroyed,
      write: (data, done) => socket.write(data, done),
      close: () => socket.destroy(),
    });
    const key = `${flow.remoteAddress}:${flow.remotePort}`;
    this.#byRemote.set(key, flow);
    const framer = new StreamFramer(this.#opts.maxMessageBytes);
    let accepted = outbound ? undefined : this.guard.entryFor(socket);
    socket.on('data', (chunk: Buffer) => {
      for (const ev of framer.push(chunk)) {
        if (ev.kind === 'message') {
          accepted?.seen(); // the first complete message: the connection has earned its keep
          accepted = undefined;
          this.#sink.receive(ev.data, source);
        } else if (ev.kind === 'ping')
          socket.write('\r\n'); // RFC 5626 §4.4.1: pong
        else if (ev.kind === 'too-large' || ev.kind === 'bad-framing') socket.destroy(); // cannot resynchronise
      }
    });
    let timer: NodeJS.Timeout | undefined;
    if (outbound && this.#opts.keepAliveMs > 0) {
      timer = setInterval(() => socket.write('\r\n\r\n'), this.#opts.keepAliveMs);
      timer.unref();
    }
    socket.on('error', () => {});
    socket.on('close', () => {
      open = false;
      if (timer) clearInterval(timer);
      this.#sockets.delete(socket);
      if (this.#byRemote.get(key) === flow) this.#byRemote.delete(key);
      this.#sink.flowClosed(flow);
    });
    this.#sink.flowOpened(flow);
    return flow;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
