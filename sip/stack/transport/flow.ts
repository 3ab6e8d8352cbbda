/**
 * What the transports share: a flow is one path to a peer (a UDP address pair or one connection), named by an
 * id so that responses and in-dialog requests can reuse it (RFC 3261 §18.2.2, RFC 5626 flows).
 */
import type net from 'node:net';
import { SipTransportError } from '../errors.js';
import type { MessageSource, TransportName } from '../message/index.js';

export interface Flow {
  readonly id: string;
  readonly transport: TransportName;
  readonly remoteAddress: string;
  readonly remotePort: number;
  /** This end of the flow (the listening address for UDP, the socket's own for a connection). */
  readonly localAddress: string;
  readonly localPort: number;
  readonly reliable: boolean;
  send(data: Buffer): Promise<void>;
  close(): void;
}

/** What a transport hands upwards. */
export interface TransportSink {
  receive(data: Buffer, source: MessageSource): void;
  flowOpened(flow: Flow): void;
  flowClosed(flow: Flow): void;
}

export interface ListenAddress {
  host: string;
  port: number;
}
export interface SecureListenAddress extends ListenAddress {
  /** PEM certificate chain and key. */
  cert: string | Buffer;
  key: string | Buffer;
}

export interface Transport {
  readonly name: TransportName;
  /** The bound address, known after listen (port 0 resolved). */
  readonly local: ListenAddress;
  /** Opens (or returns the open) flow to a peer; datagram transports return a flow without a connection. */
  connect(address: string, port: number): Promise<Flow>;
  /** The flow to a peer at once, when no connection is needed (datagram transports): connect() without a wait. */
  flow?(address: string, port: number): Flow;
  close(): Promise<void>;
}

let flowSeq = 0;
export function nextFlowId(transport: TransportName): string {
  return `${transport.toLowerCase()}-${++flowSeq}`;
}

/** Binds a server and returns the address it got (port 0 resolved). */
export async function listenOn(server: net.Server, addr: ListenAddress): Promise<ListenAddress> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(addr.port, addr.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as net.AddressInfo;
  return { host: a.address, port: a.port };
}

/** How a connection-oriented transport writes to and closes one connection. */
export interface ConnectionIo {
  isOpen(): boolean;
  write(data: Buffer, done: (err?: Error | null) => void): void;
  close(): void;
}

/**
 * A flow over one connection and the source stamped on what arrives on it. A send on a connection that has
 * gone rejects with a SipTransportError naming the flow (RFC 3261 §18.4: the TU is told of transport failures).
 */
export function connectionFlow(
  transport: TransportName,
  socket: net.Socket,
  io: ConnectionIo,
): { flow: Flow; source: MessageSource } {
  const remoteAddress = socket.remoteAddress ?? '';
  const remotePort = socket.remotePort ?? 0;
  const id = nextFlowId(transport);
  const peer = `${remoteAddress}:${remotePort}`;
  const flow: Flow = {
    id,
    transport,
    remoteAddress,
    remotePort,
    get localAddress() {
      return socket.localAddress ?? '';
    },
    get localPort() {
      return socket.localPort ?? 0;
    },
    reliable: true,
    send: (data) =>
      new Promise<void>((resolve, reject) => {
        if (!io.isOpen()) return reject(new SipTransportError(`${transport} connection ${id} to ${peer} is closed`));
        io.write(data, (err) =>
          err ? reject(new SipTransportError(`${transport} send to ${peer} failed: ${err.message}`)) : resolve(),
        );
      }),
    close: () => io.close(),
  };
  const source: MessageSource = {
    transport,
    address: remoteAddress,
    port: remotePort,
    flowId: id,
    localAddress: socket.localAddress,
    localPort: socket.localPort,
  };
  return { flow, source };
}
