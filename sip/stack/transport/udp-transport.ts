/**
 * UDP (RFC 3261 §18): one socket per listen address; every datagram is one message.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { SipTransportError } from '../errors.js';
import type { Flow, ListenAddress, Transport, TransportSink } from './flow.js';

export class UdpTransport implements Transport {
  readonly name = 'UDP' as const;
  readonly #socket: dgram.Socket;
  readonly #sink: TransportSink;
  local: ListenAddress = { host: '', port: 0 };
  #closed = false;

  private constructor(socket: dgram.Socket, sink: TransportSink) {
    this.#socket = socket;
    this.#sink = sink;
    socket.on('message', (data, rinfo) => {
      this.#sink.receive(data, {
        transport: 'UDP',
        address: rinfo.address,
        port: rinfo.port,
        flowId: `udp:${rinfo.address}:${rinfo.port}`,
        localAddress: this.local.host,
        localPort: this.local.port,
      });
    });
    socket.on('error', () => {}); // per-send errors are reported by send(); ICMP errors arrive here
  }

  static async listen(addr: ListenAddress, sink: TransportSink): Promise<UdpTransport> {
    const socket = dgram.createSocket({ type: net.isIPv6(addr.host) ? 'udp6' : 'udp4' });
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
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }
}
