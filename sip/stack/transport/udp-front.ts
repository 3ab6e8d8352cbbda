/**
 * The UDP front: a worker thread (udp-front-worker.js) that receives the SIP UDP port's datagrams, so that new
 * INVITEs beyond the published limit are refused with 503 + Retry-After within a millisecond or two even while
 * the main thread's event loop is busy (Kamailio refuses in its receiver processes the same way). Everything the
 * front does not answer reaches the main thread as if its own socket had received it.
 *
 * Sending stays on the main thread, from a socket bound to the same address and port (SO_REUSEADDR): replies and
 * requests keep the SIP port as their source with no hop through the worker. Linux delivers a unicast datagram to
 * the socket bound last on a shared port, which is the worker's; the main thread's socket still handles anything
 * it gets (were the worker to stop, it would get everything), and `start()` checks with a probe datagram which
 * socket the kernel chose, so a kernel that chooses otherwise leaves the front off instead of half on.
 *
 * TCP, TLS and WebSocket are not fronted: a carrier's trunk signalling is UDP, and a stream's messages are framed
 * on the main thread anyway.
 */
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { ListenAddress } from './flow.js';

/** What the main thread publishes to the front: the new-call gate's current limit and fixed settings. */
export interface UdpGate {
  /** Calls per second admitted (a token bucket); null for no limit. */
  limitCps: number | null;
  /** Fixed platform-wide cap on new calls per second; 0 for none. */
  platformMaxCps: number;
  retryAfterSeconds: number;
  /** The bucket's burst never falls below this many calls. */
  minCps: number;
}

export interface UdpFrontOptions {
  /** Request-URI users of INVITEs never refused (emergency numbers); separators are ignored. */
  exemptUsers: readonly string[];
  /** The worker failed (it has stopped; the main thread's socket receives from then on). */
  onError?: (err: Error) => void;
  /** New INVITEs the front refused from one source (told every 100 ms at most), e.g. for flood accounting. */
  onRefused?: (address: string, count: number, userAgent: string | undefined) => void;
}

/** A datagram the front passed on; `gated` when it was a new INVITE the front's gate admitted. */
export type FrontReceive = (data: Buffer, address: string, port: number, gated: boolean) => void;

const WORKER_URL = new URL('./udp-front-worker.js', import.meta.url);
const GATE_FIELDS = 5;
const GATE_REFUSED = 4;

export class UdpFront {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  readonly #gate: Int32Array;
  #bans = '';

  private constructor(worker: Worker, gate: Int32Array) {
    this.#worker = worker;
    this.#exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    this.#gate = gate;
  }

  /**
   * Starts the worker on `addr` (which `mainSocket` is already bound to, with reuseAddr) and proves with a probe
   * that the kernel delivers to it; resolves to undefined (the worker stopped) when it does not.
   */
  static async start(
    addr: ListenAddress,
    mainSocket: dgram.Socket,
    opts: UdpFrontOptions,
    receive: FrontReceive,
  ): Promise<UdpFront | undefined> {
    const gate = new Int32Array(new SharedArrayBuffer(GATE_FIELDS * 4));
    gate.set([-1, 0, 2, 10, 0]);
    const ipv6 = addr.host.includes(':');
    const worker = new Worker(WORKER_URL, {
      workerData: { host: addr.host, port: addr.port, ipv6, exemptUsers: [...opts.exemptUsers], gate: gate.buffer },
    });
    worker.unref();
    // A worker that fails stops, and its socket with it: the kernel then delivers every datagram to the main
    // thread's socket, which handles them as it would without a front (its own gate asked for each new INVITE).
    worker.on('error', (e) => opts.onError?.(e));
    const probe = `\r\n${randomBytes(8).toString('hex')}\r\n`;
    let seen: 'worker' | 'main' | undefined;
    const onMain = (m: Buffer) => {
      if (m.toString('latin1') === probe) seen = 'main';
    };
    mainSocket.on('message', onMain);
    worker.on('message', (m: unknown) => {
      if (Array.isArray(m)) {
        const data = Buffer.from(m[0].buffer, m[0].byteOffset, m[0].byteLength);
        // Only while starting: a datagram of the probe's length is compared with it.
        if (!seen && data.length === probe.length && data.toString('latin1') === probe) seen = 'worker';
        else receive(data, m[1], m[2], m[3] === 1);
      } else if (m && typeof m === 'object' && 'refused' in m) {
        for (const [address, count, userAgent] of (m as { refused: [string, number, string?][] }).refused)
          opts.onRefused?.(address, count, userAgent);
      }
    });
    const front = new UdpFront(worker, gate);
    try {
      await new Promise<void>((resolve, reject) => {
        worker.once('error', reject);
        worker.once('message', () => resolve());
      });
      const sender = dgram.createSocket(ipv6 ? 'udp6' : 'udp4');
      const target = addr.host === '0.0.0.0' ? '127.0.0.1' : addr.host === '::' ? '::1' : addr.host;
      for (let i = 0; i < 20 && !seen; i++) {
        sender.send(probe, addr.port, target);
        await new Promise((r) => setTimeout(r, 10));
      }
      sender.close();
    } catch (e) {
      opts.onError?.(e as Error); // it could not start: no front
    } finally {
      mainSocket.off('message', onMain);
    }
    if (seen === 'worker') return front;
    await front.close();
    return undefined;
  }

  /** Publishes the gate (on every change of the limit). */
  publish(g: UdpGate): void {
    Atomics.store(this.#gate, 0, g.limitCps === null ? -1 : Math.round(g.limitCps * 1000));
    Atomics.store(this.#gate, 1, g.platformMaxCps);
    Atomics.store(this.#gate, 2, g.retryAfterSeconds);
    Atomics.store(this.#gate, 3, g.minCps);
  }

  /** New INVITEs the front refused since it started. */
  get refused(): number {
    return Atomics.load(this.#gate, GATE_REFUSED);
  }

  /** Sources whose INVITEs the front must not answer (banned: the main thread drops them unanswered). */
  setBanned(addresses: Iterable<string>): void {
    const list = [...addresses].sort();
    const key = list.join(',');
    if (key === this.#bans) return;
    this.#bans = key;
    this.#worker.postMessage({ banned: list });
  }

  async close(): Promise<void> {
    this.#worker.postMessage({ close: true });
    const timer = setTimeout(() => void this.#worker.terminate(), 1000);
    await this.#exited;
    clearTimeout(timer);
  }
}
