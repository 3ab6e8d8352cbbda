/**
 * TCP and TLS (RFC 3261 §18, §26.2): one flow per connection, messages framed by Content-Length with
 * `StreamFramer`, CRLF keep-alive answered (RFC 5626 §4.4.1), connections reused for responses and for
 * later requests to the same peer.
 */
import net from 'node:net';
import tls from 'node:tls';
import { StreamFramer } from '../message/index.js';
import { ConnectionTransport, type GuardOptions } from './connection-transport.js';
import { connectionFlow, type Flow, type ListenAddress, type SecureListenAddress, type TransportSink } from './flow.js';

export interface StreamTransportOptions extends GuardOptions {
  maxMessageBytes: number;
  /** Send a CRLFCRLF ping on connections we opened, every this many ms (0: never). */
  keepAliveMs: number;
  /** For TLS client connections: verify the peer certificate (default true). */
  rejectUnauthorized?: boolean;
  ca?: string | Buffer;
}

export class StreamTransport extends ConnectionTransport<'TCP' | 'TLS'> {
  readonly #opts: StreamTransportOptions;
  readonly #sockets = new Set<net.Socket>();

  private constructor(
    name: 'TCP' | 'TLS',
    sink: TransportSink,
    opts: StreamTransportOptions,
    secure?: SecureListenAddress,
  ) {
    super(name, sink, secure ? tls.createServer({ cert: secure.cert, key: secure.key }) : net.createServer(), opts);
    this.#opts = opts;
    const onSocket = (s: net.Socket) => void (s.destroyed || this.#attach(s, false)); // destroyed: refused
    this.server.on(secure ? 'secureConnection' : 'connection', onSocket);
  }

  static async listen(
    name: 'TCP' | 'TLS',
    addr: ListenAddress | SecureListenAddress,
    sink: TransportSink,
    opts: StreamTransportOptions,
  ): Promise<StreamTransport> {
    const t = new StreamTransport(name, sink, opts, name === 'TLS' ? (addr as SecureListenAddress) : undefined);
    await t.bind(addr);
    return t;
  }

  protected async open(address: string, port: number): Promise<Flow> {
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
      s.once(ready, () => resolve(s));
      s.once('error', reject); // left in place: an error before the socket is attached is not an uncaught one
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
    const closed = this.opened(flow);
    const framer = new StreamFramer(this.#opts.maxMessageBytes);
    let accepted = outbound ? undefined : this.guard.entryFor(socket);
    socket.on('data', (chunk: Buffer) => {
      for (const ev of framer.push(chunk)) {
        if (ev.kind === 'message') {
          accepted?.seen(); // the first complete message: the connection has earned its keep
          accepted = undefined;
          this.sink.receive(ev.data, source);
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
      closed();
    });
    return flow;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
