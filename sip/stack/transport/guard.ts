/**
 * The connection guard of the connection-oriented transports (TCP, TLS, WS, WSS): what the stack does before
 * it spends anything on a peer's bytes.
 *
 * - Admission: the application's `admitSource` (e.g. a ban list) is asked at accept time; a refused source's
 *   connection is destroyed before a TLS handshake, an HTTP upgrade or any parsing.
 * - Caps: at most `perSource` inbound connections from one IP (sources `exempt` says yes to, such as carrier
 *   trunks, are not held to it) and `total` inbound connections in all; one over is destroyed at accept.
 * - First message: an inbound connection that has not delivered one complete SIP message within
 *   `firstMessageMs` of being accepted (slow TLS handshake, a half-sent header, an idle socket) is destroyed.
 *
 * Connections the stack opens itself are not counted: their peer was chosen by us.
 */
import type net from 'node:net';
import type { TransportName } from '../message/index.js';

export interface ConnectionLimits {
  /** Inbound connections one IP may hold at once (default 64; a phone holds one or two). */
  perSource: number;
  /** Inbound connections in all, per transport (default 10,000). */
  total: number;
  /** An inbound connection must deliver a complete message within this many ms of accept (default 10 s). */
  firstMessageMs: number;
  /** Sources not held to `perSource` (e.g. carrier trunks); they still count towards `total`. */
  exempt?: (address: string) => boolean;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  perSource: 64,
  total: 10_000,
  firstMessageMs: 10_000,
};

/** Asked before anything from `address` is parsed; false drops it (a datagram) or closes it (a connection). */
export type SourceAdmission = (address: string, transport: TransportName) => boolean;

/** An accepted connection's entry: call `seen()` on its first complete message. */
export interface AcceptedConnection {
  seen(): void;
}

const peerKey = (s: net.Socket): string => `${s.remoteAddress ?? ''}:${s.remotePort ?? 0}`;

export class ConnectionGuard {
  readonly #transport: TransportName;
  readonly #limits: ConnectionLimits;
  readonly #admit?: SourceAdmission;
  readonly #perSource = new Map<string, number>();
  /** Accepted connections by remote address:port, until their first message (or close). */
  readonly #pending = new Map<string, AcceptedConnection>();
  #total = 0;
  /** Connections refused at accept: by admission, by the per-source cap, by the total cap; and timed out. */
  readonly refused = { admission: 0, perSource: 0, total: 0, firstMessageTimeout: 0 };

  constructor(transport: TransportName, limits: ConnectionLimits, admit?: SourceAdmission) {
    this.#transport = transport;
    this.#limits = limits;
    this.#admit = admit;
  }

  get total(): number {
    return this.#total;
  }

  /**
   * Judges a freshly accepted TCP socket (before TLS or HTTP sees it). Returns false, with the socket destroyed,
   * when it is refused; otherwise counts it until it closes and arms the first-message timer.
   */
  accept(socket: net.Socket): boolean {
    const address = socket.remoteAddress ?? '';
    if (this.#admit && !this.#admit(address, this.#transport)) {
      this.refused.admission++;
      socket.destroy();
      return false;
    }
    const held = this.#perSource.get(address) ?? 0;
    if (held >= this.#limits.perSource && !this.#limits.exempt?.(address)) {
      this.refused.perSource++;
      socket.destroy();
      return false;
    }
    if (this.#total >= this.#limits.total) {
      this.refused.total++;
      socket.destroy();
      return false;
    }
    this.#perSource.set(address, held + 1);
    this.#total++;
    const key = peerKey(socket);
    const timer = setTimeout(() => {
      this.refused.firstMessageTimeout++;
      socket.destroy();
    }, this.#limits.firstMessageMs);
    timer.unref();
    const entry: AcceptedConnection = {
      seen: () => {
        clearTimeout(timer);
        if (this.#pending.get(key) === entry) this.#pending.delete(key);
      },
    };
    this.#pending.set(key, entry);
    socket.once('close', () => {
      entry.seen();
      this.#total--;
      const n = (this.#perSource.get(address) ?? 1) - 1;
      if (n <= 0) this.#perSource.delete(address);
      else this.#perSource.set(address, n);
    });
    return true;
  }

  /**
   * The entry of an accepted connection, found by the remote address and port of the socket the transport
   * works with (a TLS or WebSocket layer over the accepted TCP socket has the same peer). Undefined for
   * connections we opened, and once the first message has been seen.
   */
  entryFor(socket: net.Socket): AcceptedConnection | undefined {
    return this.#pending.get(peerKey(socket));
  }
}
