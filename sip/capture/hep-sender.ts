/**
 * Sends HEP packets to one collector over UDP, from a bounded queue: a message is queued (a few hundred ns on the
 * path of the call), and a timer sends what has waited at least HOLD_MS, so that a call's first INVITE, received
 * before the call has an id, still leaves with the call's sid as its correlation id. Nothing here ever waits for
 * the collector: beyond `queueLimit` packets waiting, or `MAX_IN_FLIGHT` handed to the kernel and not yet sent,
 * packets are dropped and counted (a slow, dead or unreachable collector costs the calls nothing).
 */
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import type { Logger } from '../../config/index.js';
import type { TappedMessage } from '../stack/index.js';
import { encodeHep3, HEP_MAX_PAYLOAD } from './hep.js';

/** How long a packet waits before it is sent (its call may get its id meanwhile), and the timer's period. */
const HOLD_MS = 100;
/** Sends handed to the socket whose callback has not run yet; beyond, the queue waits for the next tick. */
const MAX_IN_FLIGHT = 512;
/** A collector whose name did not resolve, or whose socket failed, is tried again this often. */
const RETRY_MS = 5000;

export interface HepFigures {
  sent: number;
  dropped: number;
  queued: number;
}

interface Queued {
  m: TappedMessage;
  correlation: () => string | undefined;
  /** The address to write as this end's when the socket is bound to a wildcard one. */
  localAddress: string;
}

export class HepSender {
  readonly #host: string;
  readonly #port: number;
  readonly #captureId: number;
  readonly #limit: number;
  readonly #log: Logger;
  #queue: Queued[] = [];
  #socket: dgram.Socket | undefined;
  #connecting = false;
  #retryAt = 0;
  #inFlight = 0;
  #timer: NodeJS.Timeout;
  #closed = false;
  sent = 0;
  dropped = 0;

  constructor(opts: { host: string; port: number; captureId: number; queueLimit: number; logger: Logger }) {
    this.#host = opts.host;
    this.#port = opts.port;
    this.#captureId = opts.captureId;
    this.#limit = opts.queueLimit;
    this.#log = opts.logger;
    this.#timer = setInterval(() => this.#flush(), HOLD_MS);
    this.#timer.unref();
  }

  /** Queues a message (or drops it when the queue is full); its correlation id is read when it is sent. */
  enqueue(m: TappedMessage, correlation: () => string | undefined, localAddress: string): void {
    if (this.#closed) return;
    if (this.#queue.length >= this.#limit) {
      this.dropped++;
      return;
    }
    this.#queue.push({ m, correlation, localAddress });
  }

  figures(): HepFigures {
    return { sent: this.sent, dropped: this.dropped, queued: this.#queue.length };
  }

  #flush(): void {
    if (this.#queue.length === 0) return;
    const socket = this.#socket;
    if (!socket) return void this.#connect();
    const due = performance.timeOrigin + performance.now() - HOLD_MS;
    let i = 0;
    for (; i < this.#queue.length && this.#inFlight < MAX_IN_FLIGHT; i++) {
      const q = this.#queue[i]!;
      if (q.m.at > due) break;
      this.#send(socket, q);
    }
    this.#queue = i === this.#queue.length ? [] : this.#queue.slice(i);
  }

  #send(socket: dgram.Socket, q: Queued): void {
    const { m } = q;
    const local = q.localAddress;
    const out = m.direction === 'out';
    const packet = encodeHep3({
      ipProtocol: m.transport === 'UDP' ? 17 : 6,
      srcAddress: out ? local : m.remoteAddress,
      srcPort: out ? m.localPort : m.remotePort,
      dstAddress: out ? m.remoteAddress : local,
      dstPort: out ? m.remotePort : m.localPort,
      at: m.at,
      captureId: this.#captureId,
      payload: m.data.length > HEP_MAX_PAYLOAD ? m.data.subarray(0, HEP_MAX_PAYLOAD) : m.data,
      correlationId: q.correlation(),
    });
    this.#inFlight++;
    socket.send(packet, (err) => {
      this.#inFlight--;
      if (err) this.dropped++;
      else this.sent++;
    });
  }

  /** Resolves the collector's name and opens a connected socket to it (so refusals show up as send errors). */
  #connect(): void {
    const now = Date.now();
    if (this.#connecting || this.#closed || now < this.#retryAt) return;
    this.#connecting = true;
    const host = this.#host;
    const resolved = net.isIP(host) ? Promise.resolve({ address: host, family: net.isIP(host) }) : lookup(host);
    resolved
      .then(
        ({ address, family }) =>
          new Promise<dgram.Socket>((resolve, reject) => {
            const socket = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
            socket.on('error', () => {}); // ICMP refusals arrive here as well as at the send that met them
            socket.once('connect', () => resolve(socket));
            try {
              socket.connect(this.#port, address);
            } catch (e) {
              reject(e as Error);
            }
          }),
      )
      .then((socket) => {
        if (this.#closed) return socket.close();
        socket.unref();
        this.#socket = socket;
        this.#log.info({ collector: `${host}:${this.#port}` }, 'sending SIP capture as HEP');
      })
      .catch((err: unknown) => {
        this.#retryAt = Date.now() + RETRY_MS;
        this.#log.warn({ err, collector: `${host}:${this.#port}` }, 'HEP collector unreachable; retrying in 5 s');
      })
      .finally(() => (this.#connecting = false));
  }

  /** Sends what is queued (as far as the in-flight cap allows; the rest is dropped), waits up to a second, closes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    const socket = this.#socket;
    let handed = 0;
    if (socket)
      for (const q of this.#queue) {
        if (this.#inFlight >= MAX_IN_FLIGHT) break;
        this.#send(socket, q);
        handed++;
      }
    this.dropped += this.#queue.length - handed;
    this.#queue = [];
    const deadline = Date.now() + 1000;
    while (this.#inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    socket?.close();
  }
}
