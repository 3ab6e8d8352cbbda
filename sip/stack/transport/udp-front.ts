/**
 * The UDP front: a worker thread (udp-front-worker.js) that owns the SIP UDP port's socket, so that new INVITEs
 * beyond the published limit are refused with 503 + Retry-After within a millisecond or two even while the main
 * thread's event loop is busy (Kamailio refuses in its receiver processes the same way). Everything the front does
 * not answer reaches the main thread as if its own socket had received it.
 *
 * The worker's socket is the port's only one, bound exclusively: the main thread sends through it too. Its
 * datagrams are queued and handed to the worker once per turn of the event loop, after its I/O callbacks (one message
 * for all the sends of the datagrams read together, cheaper per send than one message per callback), and each send's promise settles when the worker reports that batch handed to the kernel, with
 * the error of a send that failed (RFC 3261 §18.4: the transaction is told). Node's dgram cannot share one socket
 * between threads without setting SO_REUSEADDR on it (libuv's uv_udp_open does), which would let another local
 * process bind the port and take the switch's traffic: so one thread owns it.
 *
 * TCP, TLS and WebSocket are not fronted: a carrier's trunk signalling is UDP, and a stream's messages are framed
 * on the main thread anyway.
 */
import { Worker } from 'node:worker_threads';
import { Fifo, TOKEN_BUCKET_MODULE } from '../../../kit/index.js';
import type { ListenAddress } from './flow.js';

/** What the main thread publishes to the front: the new-call gate's current limit and fixed settings. */
export interface UdpGate {
  /** Calls per second admitted (a token bucket); null for no limit. */
  limitCps: number | null;
  retryAfterSeconds: number;
  /** The bucket's burst never falls below this many calls. */
  minCps: number;
  /**
   * New INVITEs are refused while datagrams the front handed to the main thread this many ms ago are still unread
   * (its event loop is that far behind); 0 for no such check.
   */
  maxBacklogMs: number;
}

/**
 * The switch's rules for new INVITEs, asked by the front's worker thread before its own gate: which are never refused
 * and which are over a cap of the switch's. Times are the worker's performance.now(), ms.
 */
export interface NewInvitePolicy {
  /** An INVITE to this Request-URI user is never refused (passed to the main thread as it came). */
  exempt(user: string): boolean;
  /** False: the INVITE is refused (503 + Retry-After). */
  admit(now: number): boolean;
  /** The INVITE passed the whole gate. */
  admitted(now: number): void;
}

export interface UdpFrontOptions {
  /**
   * The policy, as the worker loads it: a plain JavaScript module's URL exporting `createPolicy(data)`, which
   * returns a NewInvitePolicy, and the data passed to it (structured-cloned; a SharedArrayBuffer stays shared).
   * Without one, no INVITE is exempt and none capped beyond the gate.
   */
  policy?: { module: string; data: unknown };
  /** The worker failed after it started (it has stopped; the transport takes the port back on the main thread). */
  onError?: (err: Error) => void;
  /** New INVITEs the front refused from one source (told every 100 ms at most), e.g. for flood accounting. */
  onRefused?: (address: string, count: number, userAgent: string | undefined) => void;
}

/** A datagram the front passed on; `gated` when it was a new INVITE the front's gate admitted. */
export type FrontReceive = (data: Buffer, address: string, port: number, gated: boolean) => void;

const WORKER_URL = new URL('./udp-front-worker.js', import.meta.url);
const GATE_FIELDS = 6;
const GATE_REFUSED = 3;
const GATE_MAX_BACKLOG = 4;
/** The number of the last batch of datagrams the main thread has taken from the worker (written here). */
const GATE_TAKEN = 5;

/** A send waiting for the worker's report. */
interface PendingSend {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class UdpFront {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  readonly #gate: Int32Array;
  #bans = '';
  /** The address the worker's socket is bound to. */
  readonly local: ListenAddress;
  /**
   * Sends not yet handed to the worker: [first sequence number, data, port, address, data, port, address...], each
   * datagram's bytes as a latin1 string (the worker turns it back into the same bytes).
   */
  #batch: unknown[] | null = null;
  #nextSeq = 1;
  /** Sends handed to the worker, oldest first, with the sequence number of the first of them. */
  readonly #pending = new Fifo<PendingSend>();
  #firstPendingSeq = 1;
  #stopped = false;

  private constructor(worker: Worker, gate: Int32Array, local: ListenAddress) {
    this.#worker = worker;
    this.#exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    this.#gate = gate;
    this.local = local;
  }

  /** Starts the worker on `addr`; rejects when its socket cannot bind the port (in use, say). */
  static async start(
    addr: ListenAddress,
    opts: UdpFrontOptions,
    receive: FrontReceive,
    /** The worker stopped on its own (crashed): every pending send has failed; the port is free again. */
    onStopped: () => void,
  ): Promise<UdpFront> {
    const gate = new Int32Array(new SharedArrayBuffer(GATE_FIELDS * 4));
    gate.set([-1, 2, 10, 0, 0, 0]);
    const ipv6 = addr.host.includes(':');
    const worker = new Worker(WORKER_URL, {
      workerData: {
        host: addr.host,
        port: addr.port,
        ipv6,
        policyModule: opts.policy?.module,
        policyData: opts.policy?.data,
        gate: gate.buffer,
        tokenBucketModule: TOKEN_BUCKET_MODULE,
      },
    });
    worker.unref();
    const bound = await new Promise<ListenAddress>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('exit', () => reject(new Error('the UDP front stopped while starting')));
      worker.once('message', (m: { bound?: ListenAddress; bindError?: string }) =>
        m.bound ? resolve(m.bound) : reject(new Error(`UDP bind ${addr.host}:${addr.port} failed: ${m.bindError}`)),
      );
    }).catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    });
    worker.removeAllListeners('error').removeAllListeners('exit');
    const front = new UdpFront(worker, gate, bound);
    worker.on('error', (e) => opts.onError?.(e));
    worker.once('exit', () => {
      if (front.#stopped) return;
      front.#stopped = true;
      front.#failPending(new Error('the UDP front stopped'));
      onStopped();
    });
    worker.on('message', (m: unknown) => {
      if (Array.isArray(m)) {
        // The datagrams the worker read in one turn: the batch's number, then [data, address, port, gated] after one
        // another. Taking it tells the worker how far behind this thread is (udp-front-worker.js, backlog()).
        Atomics.store(gate, GATE_TAKEN, m[0] as number);
        for (let i = 1; i + 3 < m.length; i += 4) {
          const d = m[i] as Uint8Array;
          receive(Buffer.from(d.buffer, d.byteOffset, d.byteLength), m[i + 1], m[i + 2], m[i + 3] === 1);
        }
      } else if (m && typeof m === 'object') {
        if ('sent' in m) front.#settle(m as { sent: number; errors: (number | string)[] });
        else if ('refused' in m)
          for (const [address, count, userAgent] of (m as { refused: [string, number, string?][] }).refused)
            opts.onRefused?.(address, count, userAgent);
      }
    });
    return front;
  }

  /** Sends a datagram from the port's socket; settles once the kernel took it (or refused it). */
  send(data: Uint8Array, port: number, address: string): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error('the UDP front stopped'));
    return new Promise<void>((resolve, reject) => {
      if (this.#batch === null) {
        this.#batch = [this.#nextSeq];
        setImmediate(this.#flush);
      }
      // As a latin1 string, one byte a character: a string is copied into the message as it is, whereas a Buffer
      // is cloned with the whole pool slab it was cut from (8 KB for a 500-byte response), most of a send's cost.
      this.#batch.push(latin1(data), port, address);
      this.#nextSeq++;
      this.#pending.push({ resolve, reject });
    });
  }

  readonly #flush = (): void => {
    const batch = this.#batch;
    this.#batch = null;
    if (batch !== null && !this.#stopped) this.#worker.postMessage(batch);
  };

  /** The worker's report on sends up to `sent`: the failed ones are rejected with their error, the rest resolved. */
  #settle(report: { sent: number; errors: (number | string)[] }): void {
    const failed = new Map<number, string>();
    for (let i = 0; i < report.errors.length; i += 2)
      failed.set(report.errors[i] as number, report.errors[i + 1] as string);
    while (this.#firstPendingSeq <= report.sent && this.#pending.length > 0) {
      const p = this.#pending.shift()!;
      const error = failed.get(this.#firstPendingSeq++);
      if (error === undefined) p.resolve();
      else p.reject(new Error(error));
    }
  }

  #failPending(err: Error): void {
    for (const p of this.#pending.clear()) p.reject(err);
    this.#batch = null;
  }

  /** Publishes the gate (on every change of the limit). */
  publish(g: UdpGate): void {
    Atomics.store(this.#gate, 0, g.limitCps === null ? -1 : Math.round(g.limitCps * 1000));
    Atomics.store(this.#gate, 1, g.retryAfterSeconds);
    Atomics.store(this.#gate, 2, g.minCps);
    Atomics.store(this.#gate, GATE_MAX_BACKLOG, Math.round(g.maxBacklogMs));
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

  /** Stops the worker at once, as a crash would (tests): the transport binds the port again on the main thread. */
  async crash(): Promise<void> {
    await this.#worker.terminate();
  }

  async close(): Promise<void> {
    if (this.#stopped) return;
    this.#flush();
    this.#stopped = true;
    this.#worker.postMessage({ close: true });
    const timer = setTimeout(() => void this.#worker.terminate(), 1000);
    await this.#exited;
    clearTimeout(timer);
    this.#failPending(new Error('UDP transport closed'));
  }
}

/** The bytes as a string of one character each (latin1): `Buffer.from(s, 'latin1')` gives them back unchanged. */
function latin1(data: Uint8Array): string {
  return Buffer.prototype.latin1Slice.call(data, 0, data.byteLength);
}
