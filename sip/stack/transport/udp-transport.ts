/**
 * UDP (RFC 3261 §18): one socket per listen address; every datagram is one message.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { widenReceiveBuffer } from '../../../kit/index.js';
import { SipTransportError } from '../errors.js';
import type { Flow, ListenAddress, Transport, TransportSink } from './flow.js';
import { UdpFront, type UdpFrontOptions } from './udp-front.js';

type Send = (data: Uint8Array, port: number, address: string) => Promise<void>;

export class UdpTransport implements Transport {
  readonly name = 'UDP' as const;
  readonly #sink: TransportSink;
  /** The port's socket on this thread (none while the front owns the port). */
  #socket: dgram.Socket | undefined;
  #send: Send;
  local: ListenAddress = { host: '', port: 0 };
  /** The worker that owns this port's socket and refuses new INVITEs beyond the gate (udp-front.ts). */
  front: UdpFront | undefined;
  #closed = false;

  private constructor(sink: TransportSink) {
    this.#sink = sink;
    this.#send = () => Promise.reject(new SipTransportError('UDP transport not bound'));
  }

  #receive(data: Buffer, address: string, port: number, gated: boolean): void {
    this.#sink.receive(data, {
      transport: 'UDP',
      address,
      port,
      flowId: `udp:${address}:${port}`,
      localAddress: this.local.host,
      localPort: this.local.port,
      ...(gated && { gated }),
    });
  }

  /**
   * With `front`, a worker thread owns the port's socket (it receives, and sends for this thread); without one, or
   * when the worker cannot start, a socket on this thread does both. Either way the port is bound exclusively.
   */
  static async listen(addr: ListenAddress, sink: TransportSink, front?: UdpFrontOptions): Promise<UdpTransport> {
    const t = new UdpTransport(sink);
    if (front) {
      try {
        t.front = await UdpFront.start(
          addr,
          front,
          (d, address, port, g) => t.#receive(d, address, port, g),
          () => void t.#takeBack(front),
        );
      } catch (err) {
        front.onError?.(err as Error); // it could not start: no front (a port in use fails again below)
      }
    }
    if (t.front) {
      t.local = t.front.local;
      const f = t.front;
      t.#send = (data, port, address) => f.send(data, port, address);
    } else await t.#bind(addr);
    return t;
  }

  /** Binds the port on this thread and sends from it. */
  async #bind(addr: ListenAddress): Promise<void> {
    const socket = dgram.createSocket(net.isIPv6(addr.host) ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(addr.port, addr.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // A larger receive buffer keeps bursts (load tests, retransmission storms) from being dropped by the kernel.
    widenReceiveBuffer(socket);
    socket.on('message', (data, rinfo) => this.#receive(data, rinfo.address, rinfo.port, false));
    socket.on('error', () => {}); // per-send errors are reported by send(); ICMP errors arrive here
    this.#socket = socket;
    const a = socket.address();
    this.local = { host: a.address, port: a.port };
    this.#send = (data, port, address) =>
      new Promise<void>((resolve, reject) =>
        socket.send(data, port, address, (err) => (err ? reject(err) : resolve())),
      );
  }

  /** The front's worker stopped on its own: this thread binds the port again (its gate asks for each INVITE). */
  async #takeBack(front: UdpFrontOptions): Promise<void> {
    this.front = undefined;
    if (this.#closed) return;
    try {
      await this.#bind(this.local);
    } catch (err) {
      front.onError?.(err as Error);
    }
  }

  async connect(address: string, port: number): Promise<Flow> {
    return this.flow(address, port);
  }

  flow(address: string, port: number): Flow {
    return new UdpFlow(this, address, port);
  }

  /** Sends a datagram from this port (UdpFlow's send). */
  sendTo(data: Uint8Array, port: number, address: string): Promise<void> {
    if (this.#closed) return Promise.reject(new SipTransportError('UDP transport closed'));
    return this.#send(data, port, address).catch((err: Error) => {
      throw new SipTransportError(`UDP send to ${address}:${port} failed: ${err.message}`);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.front?.close();
    const socket = this.#socket;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }
}

/**
 * A UDP flow: the listening port and a peer's address. A class rather than an object of closures: one is made for
 * every response and request sent, and each closure made would be renamed by the TypeScript loader's keep-names
 * helper in development and tests.
 */
class UdpFlow implements Flow {
  readonly id: string;
  readonly transport = 'UDP' as const;
  readonly localAddress: string;
  readonly localPort: number;
  readonly reliable = false;
  readonly #udp: UdpTransport;

  constructor(
    udp: UdpTransport,
    readonly remoteAddress: string,
    readonly remotePort: number,
  ) {
    this.#udp = udp;
    this.id = `udp:${remoteAddress}:${remotePort}`;
    this.localAddress = udp.local.host;
    this.localPort = udp.local.port;
  }

  send(data: Buffer): Promise<void> {
    return this.#udp.sendTo(data, this.remotePort, this.remoteAddress);
  }

  close(): void {}
}
