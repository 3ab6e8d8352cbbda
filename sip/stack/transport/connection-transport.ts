/**
 * What the connection-oriented transports (TCP, TLS, WS, WSS) share: a server with the connection guard in front
 * of it, the open flows by peer (RFC 3261 §18: a request to a peer reuses the connection already open to it), and
 * the certificate of the secure ones.
 */
import type net from 'node:net';
import tls from 'node:tls';
import { SipTransportError } from '../errors.js';
import { listenOn, type Flow, type ListenAddress, type Transport, type TransportSink } from './flow.js';
import { ConnectionGuard, DEFAULT_CONNECTION_LIMITS, type ConnectionLimits, type SourceAdmission } from './guard.js';

/** What the guard of a connection-oriented transport is given. */
export interface GuardOptions {
  /** Inbound connection caps and the first-message deadline (guard.ts). */
  limits?: ConnectionLimits;
  /** Asked at accept: a refused source's connection is closed before TLS, an HTTP upgrade or any parsing. */
  admitSource?: SourceAdmission;
}

export abstract class ConnectionTransport<Name extends 'TCP' | 'TLS' | 'WS' | 'WSS'> implements Transport {
  readonly guard: ConnectionGuard;
  local: ListenAddress = { host: '', port: 0 };
  readonly #byRemote = new Map<string, Flow>();

  protected constructor(
    readonly name: Name,
    protected readonly sink: TransportSink,
    /** The listening server (TLS or HTTPS for the secure transports). */
    protected readonly server: net.Server,
    guarding: GuardOptions,
  ) {
    this.guard = new ConnectionGuard(name, guarding.limits ?? DEFAULT_CONNECTION_LIMITS, guarding.admitSource);
    // 'connection' is the raw TCP socket, before a TLS handshake or an HTTP upgrade: refused sources cost neither.
    this.server.prependListener('connection', (raw: net.Socket) => void this.guard.accept(raw));
    this.server.on('error', () => {});
  }

  /** Binds the server; `local` is then the address it got. */
  protected async bind(addr: ListenAddress): Promise<void> {
    this.local = await listenOn(this.server, addr);
  }

  /** A new certificate for connections accepted from now on (TLS, WSS); connections already open keep theirs. */
  setCertificate(pem: { cert: string; key: string }): void {
    if (this.server instanceof tls.Server) this.server.setSecureContext({ cert: pem.cert, key: pem.key });
  }

  /** The flow open to the peer, else a new connection to it (a failure to connect is a SipTransportError). */
  async connect(address: string, port: number): Promise<Flow> {
    const existing = this.#byRemote.get(`${address}:${port}`);
    if (existing) return existing;
    return this.open(address, port).catch((e: Error) => {
      throw new SipTransportError(`${this.name} connect to ${address}:${port}: ${e.message}`);
    });
  }

  /** Opens a connection to a peer and returns its flow (attached with `opened`). */
  protected abstract open(address: string, port: number): Promise<Flow>;

  /**
   * A connection's flow is open: reachable under `key` (the peer's address and port unless given) and handed up.
   * Returns what its connection's close must call.
   */
  protected opened(flow: Flow, key = `${flow.remoteAddress}:${flow.remotePort}`): () => void {
    this.#byRemote.set(key, flow);
    this.sink.flowOpened(flow);
    return () => {
      if (this.#byRemote.get(key) === flow) this.#byRemote.delete(key);
      this.sink.flowClosed(flow);
    };
  }

  abstract close(): Promise<void>;
}
