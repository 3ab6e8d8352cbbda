import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { bdecode, bencode, type BValue } from './bencode.js';
import { MediaError } from './errors.js';
import { Fifo, widenReceiveBuffer } from '../kit/index.js';

/**
 * Cookies: unique per request for as long as rtpengine caches answers by cookie, so a random per-process prefix and
 * a counter: no syscall for random bytes per command.
 */
const COOKIE_PREFIX = randomBytes(6).toString('hex');
let cookieCounter = 0;

/**
 * A client for rtpengine's ng control protocol: each request is `<cookie> <bencoded dict>` in one UDP datagram
 * and the answer echoes the cookie. rtpengine caches answers by cookie, so resending the same datagram on a lossy
 * path is safe (it does not run the command twice); we resend every `retransmitMs` until `timeoutMs`.
 *
 * Like mediasoup's channel, the client rejects every pending request when it is closed or told the engine is
 * gone, so no caller waits forever on a dead engine.
 */
export type NgParams = { [key: string]: BValue | undefined };
export type NgResponse = { result: string; 'error-reason'?: string; warning?: string; [key: string]: unknown };

export interface NgClientOptions {
  host: string;
  port: number;
  /** Whole-request deadline. */
  timeoutMs?: number;
  /** Resend interval for a request with no answer yet. */
  retransmitMs?: number;
  /**
   * Requests sent and not yet answered, at most; the rest wait their turn here. rtpengine reads its control socket
   * with a default-sized buffer (208 KB, about a hundred offers): past that the kernel drops commands, and each
   * costs its call the resend interval.
   */
  maxInFlight?: number;
}

interface Pending {
  command: string;
  resolve: (r: NgResponse) => void;
  reject: (e: MediaError) => void;
  datagram: Buffer;
  timeoutMs: number;
  /** performance.now() past which the request is rejected with MEDIA_TIMEOUT. */
  deadline: number;
  /** When to resend; Infinity until the request is sent (it then holds one of the maxInFlight slots until settled). */
  resendAt: number;
  /** The send callback: a datagram that could not be sent fails its request. */
  onSent: (err: Error | null) => void;
}

/** A request waiting for a slot: its cookie and when it started waiting. */
interface Queued {
  cookie: string;
  since: number;
}

export class NgClient {
  readonly host: string;
  readonly port: number;
  readonly #timeoutMs: number;
  readonly #retransmitMs: number;
  readonly #pending = new Map<string, Pending>();
  readonly #maxInFlight: number;
  #inFlight = 0;
  readonly #queue = new Fifo<Queued>();
  /** The longest a request waited for a slot since the last sampleSendWait(). */
  #maxWaitMs = 0;
  #socket: Socket | undefined;
  #closed = false;
  /**
   * One timer for every request's resends and deadline, armed for the earliest of them: a request answered in time
   * (nearly all) costs no timer of its own. When it fires, one sweep of the pending requests resends and rejects.
   */
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;

  constructor(opts: NgClientOptions) {
    this.host = opts.host;
    this.port = opts.port;
    this.#timeoutMs = opts.timeoutMs ?? 5000;
    this.#maxInFlight = Math.max(1, opts.maxInFlight ?? 64);
    this.#retransmitMs = opts.retransmitMs ?? 1000;
  }

  /** `host:port` as written in config.rtpengine.urls. */
  get address(): string {
    return isIP(this.host) === 6 ? `[${this.host}]:${this.port}` : `${this.host}:${this.port}`;
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * How long requests waited for a slot (maxInFlight) since the last call: the longest wait that ended, or the
   * oldest still waiting, ms. rtpengine falling behind shows here first (overload control reads it).
   */
  sampleSendWait(now = performance.now()): number {
    while (this.#queue.length > 0 && !this.#pending.has(this.#queue.peek()!.cookie)) this.#queue.shift();
    const head = this.#queue.peek();
    const wait = Math.max(this.#maxWaitMs, head ? now - head.since : 0);
    this.#maxWaitMs = 0;
    return wait;
  }

  #ensureSocket(): Socket {
    if (this.#socket) return this.#socket;
    const socket = createSocket(isIP(this.host) === 6 ? 'udp6' : 'udp4');
    // Bound here (sends wait for it) to widen its receive buffer: at the default 208 KB the answers to a few hundred
    // commands in flight overflow it while the loop is busy, and each dropped answer costs its call the 1-s resend.
    socket.bind(0, () => widenReceiveBuffer(socket));
    socket.on('message', (msg) => this.#onMessage(msg));
    socket.on('error', (err) => this.rejectAll(new MediaError('MEDIA_ENGINE_GONE', `ng socket error: ${err.message}`)));
    socket.unref();
    this.#socket = socket;
    return socket;
  }

  #onMessage(msg: Buffer): void {
    const space = msg.indexOf(0x20);
    if (space <= 0) return;
    const cookie = msg.toString('ascii', 0, space);
    const pending = this.#pending.get(cookie);
    if (!pending) return; // a late answer to a resend we already settled
    this.#settle(cookie);
    let decoded: unknown;
    try {
      decoded = bdecode(msg.subarray(space + 1));
    } catch (err) {
      pending.reject(new MediaError('MEDIA_PROTOCOL', `undecodable ng answer to ${pending.command}`, err));
      return;
    }
    if (typeof decoded !== 'object' || decoded === null || typeof (decoded as NgResponse).result !== 'string') {
      pending.reject(new MediaError('MEDIA_PROTOCOL', `ng answer to ${pending.command} has no result`));
      return;
    }
    const response = decoded as NgResponse;
    if (response.result === 'error') {
      pending.reject(
        new MediaError('MEDIA_ENGINE_ERROR', `rtpengine ${pending.command}: ${response['error-reason'] ?? 'error'}`),
      );
      return;
    }
    pending.resolve(response);
  }

  #settle(cookie: string): void {
    const pending = this.#pending.get(cookie);
    if (!pending) return;
    this.#pending.delete(cookie);
    // Nothing left to wait for: the timer may stay armed, but it no longer keeps the process alive.
    if (this.#pending.size === 0) this.#timer?.unref();
    if (pending.resendAt === Infinity) return; // still queued: dropped from the queue when its turn comes
    this.#inFlight--;
    this.#startQueued();
  }

  /** Sends queued requests while slots are free (requests settled while queued are skipped). */
  #startQueued(): void {
    while (this.#inFlight < this.#maxInFlight && this.#queue.length > 0) {
      const next = this.#queue.shift()!;
      const pending = this.#pending.get(next.cookie);
      if (!pending) continue;
      const now = performance.now();
      this.#maxWaitMs = Math.max(this.#maxWaitMs, now - next.since);
      this.#start(pending, now);
    }
  }

  #start(pending: Pending, now: number): void {
    this.#inFlight++;
    pending.resendAt = now + this.#retransmitMs;
    this.#arm(pending.resendAt);
    this.#send(pending);
  }

  #send(pending: Pending): void {
    this.#socket?.send(pending.datagram, this.port, this.host, pending.onSent);
  }

  /** Make sure the timer fires by `at` (performance.now() time). */
  #arm(at: number): void {
    if (this.#timer !== undefined && this.#timerAt <= at) {
      this.#timer.ref();
      return;
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#sweep(), Math.max(1, Math.ceil(at - performance.now())));
  }

  /** Reject what passed its deadline, resend what is due, and arm the timer for the next of either. */
  #sweep(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const [cookie, pending] of this.#pending) {
      if (now >= pending.deadline) {
        this.#settle(cookie);
        pending.reject(
          new MediaError(
            'MEDIA_TIMEOUT',
            `rtpengine ${this.address} did not answer ${pending.command} in ${pending.timeoutMs} ms`,
          ),
        );
        continue;
      }
      if (now >= pending.resendAt) {
        pending.resendAt = now + this.#retransmitMs;
        this.#send(pending);
      }
      next = Math.min(next, pending.deadline, pending.resendAt);
    }
    if (next !== Infinity) this.#arm(next);
  }

  /** Send one ng command and wait for its answer. `result: error` rejects with MEDIA_ENGINE_ERROR. */
  request(command: string, params: NgParams = {}, timeoutMs = this.#timeoutMs): Promise<NgResponse> {
    if (this.#closed) return Promise.reject(new MediaError('MEDIA_ENGINE_GONE', 'ng client closed'));
    this.#ensureSocket();
    const cookie = `${COOKIE_PREFIX}${(++cookieCounter).toString(36)}`;
    const datagram = bencode({ ...params, command }, `${cookie} `);
    return new Promise<NgResponse>((resolve, reject) => {
      const now = performance.now();
      const deadline = now + timeoutMs;
      const onSent = (err: Error | null): void => {
        if (!err || this.#pending.get(cookie) !== pending) return;
        this.#settle(cookie);
        reject(new MediaError('MEDIA_ENGINE_GONE', `ng send failed: ${err.message}`, err));
      };
      const pending: Pending = { command, resolve, reject, datagram, timeoutMs, deadline, resendAt: Infinity, onSent };
      this.#pending.set(cookie, pending);
      this.#arm(deadline);
      if (this.#inFlight < this.#maxInFlight) this.#start(pending, now);
      else this.#queue.push({ cookie, since: now });
    });
  }

  /** Reject every request in flight (the engine died or was restarted). The client stays usable. */
  rejectAll(error: MediaError): void {
    this.#queue.clear(); // nothing waiting is sent now; each is rejected below
    for (const [cookie, pending] of [...this.#pending]) {
      this.#settle(cookie);
      pending.reject(error);
    }
  }

  /** Safe to call twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.rejectAll(new MediaError('MEDIA_ENGINE_GONE', 'ng client closed'));
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#socket?.close();
    this.#socket = undefined;
  }

  async ping(timeoutMs?: number): Promise<boolean> {
    const r = await this.request('ping', {}, timeoutMs);
    return r.result === 'pong';
  }

  /** SDP offer; the answer's `sdp` is what to send on to the other side. */
  offer(
    params: NgParams & { 'call-id': string; 'from-tag': string; sdp: string },
  ): Promise<NgResponse & { sdp: string }> {
    return this.request('offer', params) as Promise<NgResponse & { sdp: string }>;
  }

  answer(
    params: NgParams & { 'call-id': string; 'from-tag': string; 'to-tag': string; sdp: string },
  ): Promise<NgResponse & { sdp: string }> {
    return this.request('answer', params) as Promise<NgResponse & { sdp: string }>;
  }

  delete(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('delete', params);
  }

  query(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('query', params);
  }

  /** Call ids the engine currently holds. */
  async list(limit = 10000): Promise<string[]> {
    const r = await this.request('list', { limit });
    return Array.isArray(r.calls) ? (r.calls as string[]) : [];
  }

  /** Inject a file into the call towards `from-tag`'s peer; rtpengine answers with `duration` in ms. */
  playMedia(params: NgParams & { 'call-id': string; 'from-tag'?: string; file?: string }): Promise<NgResponse> {
    // Opening and probing the file happens before rtpengine answers; under a burst of starts that is slow
    // (300 at once took over 3 s on 2 cores), so this command gets a longer deadline than the default.
    return this.request('play media', params, Math.max(this.#timeoutMs, 10_000));
  }

  stopMedia(params: NgParams & { 'call-id': string; 'from-tag'?: string }): Promise<NgResponse> {
    return this.request('stop media', params);
  }

  startRecording(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('start recording', params);
  }

  stopRecording(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('stop recording', params);
  }

  blockMedia(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('block media', params);
  }

  unblockMedia(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('unblock media', params);
  }

  blockDtmf(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('block DTMF', params);
  }

  unblockDtmf(params: NgParams & { 'call-id': string }): Promise<NgResponse> {
    return this.request('unblock DTMF', params);
  }

  playDtmf(params: NgParams & { 'call-id': string; code: string }): Promise<NgResponse> {
    return this.request('play DTMF', params);
  }

  /**
   * A copy of `from-tag`'s media to a new participant (rtpengine's subscription); the answer's `sdp` is a sendonly
   * offer and its `to-tag` names the subscription for `subscribe answer` and `unsubscribe`.
   */
  subscribeRequest(
    params: NgParams & { 'call-id': string; 'from-tag': string },
  ): Promise<NgResponse & { sdp: string }> {
    return this.request('subscribe request', params) as Promise<NgResponse & { sdp: string }>;
  }

  subscribeAnswer(params: NgParams & { 'call-id': string; 'to-tag': string; sdp: string }): Promise<NgResponse> {
    return this.request('subscribe answer', params);
  }

  unsubscribe(params: NgParams & { 'call-id': string; 'to-tag': string }): Promise<NgResponse> {
    return this.request('unsubscribe', params);
  }

  statistics(): Promise<NgResponse> {
    return this.request('statistics');
  }
}
