/**
 * UDP (RFC 3261 §18): one socket per listen address; every datagram is one message.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { SipTransportError } from '../errors.js';
import type { Flow, ListenAddress, Transport, TransportSink } from './flow.js';
import { UdpFront, type UdpFrontOptions } from './udp-front.js';

export class UdpTransport implements Transport {
  readonly name = 'UDP' as const;
  readonly #socket: dgram.Socket;
  readonly #sink: TransportSink;
  local: ListenAddress = { host: '', port: 0 };
  /** The worker that receives this port's datagrams and refuses new INVITEs beyond the gate (udp-front.ts). */
  front: UdpFront | undefined;
  #closed = false;

  private constructor(socket: dgram.Socket, sink: TransportSink) {
    this.#socket = socket;
    this.#sink = sink;
    socket.on('message', (data, rinfo) => this.#receive(data, rinfo.address, rinfo.port, false));
    socket.on('error', () => {}); // per-send errors are reported by send(); ICMP errors arrive here
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
   * With `front`, a worker thread receives the port's datagrams (the main thread's socket shares the port with
   * SO_REUSEADDR and sends); without one, or when the kernel does not deliver to the worker, this socket receives.
   */
  static async listen(addr: ListenAddress, sink: TransportSink, front?: UdpFrontOptions): Promise<UdpTransport> {
    const socket = dgram.createSocket({ type: net.isIPv6(addr.host) ? 'udp6' : 'udp4', reuseAddr: !!front });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(addr.port, addr.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // A larger receive buffer keeps bursts (load tests, retransmission storms) from being dropped by the kernel.
    try {
      socket.setRecvBufferSize(4 * 1024 * 1024);
    } catch {
      /* the kernel caps it; not fatal */
    }
    const t = new UdpTransport(socket, sink);
    const a = socket.address();
    t.local = { host: a.address, port: a.port };
    if (front)
      t.front = await UdpFront.start(t.local, socket, front, (d, address, port, g) => t.#receive(d, address, port, g));
    return t;
  }

  async connect(address: string, port: number): Promise<Flow> {
    return this.flow(address, port);
  }

  flow(address: string, port: number): Flow {
    const socket = this.#socket;
    return {
      id: `udp:${address}:${port}`,
      transport: 'UDP',
      remoteAddress: address,
      remotePort: port,
      reliable: false,
      send: (data) =>
        new Promise<void>((resolve, reject) => {
          if (this.#closed) return reject(new SipTransportError('UDP transport closed'));
          socket.send(data, port, address, (err) =>
            err ? reject(new SipTransportError(`UDP send to ${address}:${port} failed: ${err.message}`)) : resolve(),
          );
        }),
      close: () => {},
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.front?.close();
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }
}
