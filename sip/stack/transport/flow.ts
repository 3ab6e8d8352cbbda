/**
 * What the transports share: a flow is one path to a peer (a UDP address pair or one connection), named by an
 * id so that responses and in-dialog requests can reuse it (RFC 3261 §18.2.2, RFC 5626 flows).
 */
import type { MessageSource, TransportName } from '../message/index.js';

export interface Flow {
  readonly id: string;
  readonly transport: TransportName;
  readonly remoteAddress: string;
  readonly remotePort: number;
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
  close(): Promise<void>;
}

let flowSeq = 0;
export function nextFlowId(transport: TransportName): string {
  return `${transport.toLowerCase()}-${++flowSeq}`;
}
