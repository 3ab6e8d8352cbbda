import { lookup as dnsLookup } from 'node:dns/promises';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { UrlPolicy } from './url-policy.js';
import { TIMED_OUT } from './abort.js';
import { requestUrl } from './request-url.js';

/**
 * `fetch` for URLs a customer chose (server-side request forgery). For every hop it resolves the host (a name's
 * answer serves for a second: see `lookupAll`), refuses the request if ANY address the name resolves to is refused
 * by the UrlPolicy, and connects to the address it checked (a `lookup` that returns it pins the connection, so a
 * second DNS answer cannot swap in another host; TLS still verifies the certificate against the host name). Redirects are followed one hop at a
 * time, each hop checked the same way, at most `maxRedirects`; with `redirect: 'manual'` a 3xx is returned as is.
 * Only http: and https:.
 *
 * It answers a standard `Response`, so callers keep their streaming, size and deadline code. Failures before a
 * response are OutboundUrlError; an abort (the caller's signal, or the backstop deadline) rejects with the
 * signal's reason, as fetch does.
 */
export type OutboundUrlErrorCode = 'URL_INVALID' | 'URL_FORBIDDEN' | 'URL_UNREACHABLE' | 'URL_TOO_MANY_REDIRECTS';

/** Customer-facing texts: fixed per code, so a refused address reads the same whatever is listening behind it. */
const MESSAGES: Record<OutboundUrlErrorCode, string> = {
  URL_INVALID: 'the URL is not an absolute http(s) URL',
  URL_FORBIDDEN: 'the URL points to an address this service does not send requests to',
  URL_UNREACHABLE: 'could not connect to the URL',
  URL_TOO_MANY_REDIRECTS: 'the URL redirected too many times',
};

export class OutboundUrlError extends Error {
  /**
   * @param detail for logs only (the refused address and its class, the socket error): never shown to a
   * customer, since it would tell a refused port from a closed one.
   */
  constructor(
    readonly code: OutboundUrlErrorCode,
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(MESSAGES[code], options);
    this.name = 'OutboundUrlError';
  }
}

export interface GuardedFetchOptions {
  readonly policy: UrlPolicy;
  /** Hops followed with `redirect: 'follow'` (fetch's default mode). Default 5. */
  readonly maxRedirects?: number;
  /** Backstop for a whole exchange when the caller gives no signal of its own. Default 30 s. */
  readonly timeoutMs?: number;
}

export type GuardedFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([204, 205, 304]);

/** Builds a fetch-compatible function bound to a policy; see the module comment. */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch & typeof fetch {
  const maxRedirects = options.maxRedirects ?? 5;
  const backstopMs = options.timeoutMs ?? 30_000;
  const guarded = async (input: string | URL, init: RequestInit = {}): Promise<Response> => {
    const signal = init.signal ?? AbortSignal.timeout(backstopMs);
    let url = toUrl(input);
    let method = (init.method ?? 'GET').toUpperCase();
    let body = toBuffer(init.body);
    const headers = headersOf(init.headers);
    for (let hop = 0; ; hop++) {
      const target = targetOf(url);
      const address = await pinUnder(target, options.policy, signal);
      const response = await exchange(target, address, { method, headers, body }, signal);
      const location = response.headers.get('location');
      if (!REDIRECTS.has(response.status) || location === null || init.redirect === 'manual') return response;
      await response.body?.cancel().catch(() => undefined);
      if (init.redirect === 'error' || hop >= maxRedirects) {
        throw new OutboundUrlError('URL_TOO_MANY_REDIRECTS', `${hop + 1} redirects from ${toUrl(input).origin}`);
      }
      const next = toUrl(new URL(location, url).href);
      // As fetch does: 303 (and 301/302 after a POST) turns the request into a GET without its body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = undefined;
        delete headers['content-type'];
      }
      if (next.origin !== url.origin) delete headers.authorization;
      url = next;
    }
  };
  return guarded as GuardedFetch & typeof fetch;
}

function toUrl(input: string | URL): URL {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new OutboundUrlError('URL_INVALID', `not a URL: ${String(input).slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundUrlError('URL_INVALID', `scheme ${url.protocol} refused`);
  }
  return url;
}

/**
 * The request's headers, names in lower case. A plain object of strings (what the switch's own callers pass) is
 * copied as it is, not built into a Headers object to be read back: every webhook and status callback passes here.
 */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function headersOf(init: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (init === undefined || init === null) return out;
  if (!(init instanceof Headers) && !Array.isArray(init) && typeof init === 'object') {
    let plain = true;
    for (const [name, value] of Object.entries(init)) {
      const key = name.toLowerCase();
      if (typeof value !== 'string' || !TOKEN.test(name) || /[\r\n\0]/.test(value) || key in out) {
        plain = false; // anything unusual is read as fetch reads it (and refused as it would be)
        break;
      }
      out[key] = value.trim();
    }
    if (plain) return out;
  }
  const checked: Record<string, string> = {};
  new Headers(init).forEach((value, name) => (checked[name] = value));
  return checked;
}

function toBuffer(body: RequestInit['body'] | Uint8Array): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('guarded fetch sends string or byte bodies only');
}

export interface Pinned {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves the URL's host and checks every address it has; answers the one to connect to (media streams pin a
 * WebSocket to it the same way). */
export function resolveAllowed(url: URL, policy: UrlPolicy, signal: AbortSignal): Promise<Pinned> {
  return pinUnder(hostOf(url), policy, signal);
}

async function pinUnder(host: Host, policy: UrlPolicy, signal: AbortSignal): Promise<Pinned> {
  const stop = new Stop(signal, undefined);
  try {
    return await pin(host, policy, stop);
  } finally {
    stop.done();
  }
}

/**
 * A host name's addresses as last looked up, reused for ANSWER_REUSE_MS: every status callback and webhook looked
 * its host up again (a getaddrinfo on libuv's thread pool each, with no cache in Node). Only the answer is kept:
 * its addresses are checked against the policy on every request, so reusing it can never pass an address the policy
 * refuses; a name whose DNS changes is looked up and checked again within ANSWER_REUSE_MS. Failed lookups are not
 * kept. Lookups of one name at the same time share one.
 */
const ANSWER_REUSE_MS = 1_000;
const MAX_ANSWERS = 1024;
const answers = new Map<string, { readonly at: number; readonly addresses: Promise<Pinned[]> }>();

function lookupAll(host: string): Promise<Pinned[]> {
  const now = performance.now();
  const kept = answers.get(host);
  if (kept !== undefined && now - kept.at < ANSWER_REUSE_MS) return kept.addresses;
  if (answers.size >= MAX_ANSWERS) answers.clear();
  const addresses = dnsLookup(host, { all: true, verbatim: true }).then((found) =>
    found.map((a): Pinned => ({ address: a.address, family: a.family === 6 ? 6 : 4 })),
  );
  answers.set(host, { at: now, addresses });
  addresses.catch(() => {
    if (answers.get(host)?.addresses === addresses) answers.delete(host);
  });
  return addresses;
}

/** A URL's host name without an IPv6 address's brackets, and the address it is when it is one. */
interface Host {
  readonly host: string;
  readonly literal: Pinned | undefined;
}

function hostOf(url: URL): Host {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  return { host, literal: family === 0 ? undefined : { address: host, family: family as 4 | 6 } };
}

/** The address to connect to for `target`, every address its host has checked against `policy`. */
async function pin(target: Host, policy: UrlPolicy, stop: Stop): Promise<Pinned> {
  const host = target.host;
  let addresses: Pinned[];
  if (target.literal !== undefined) {
    addresses = [target.literal];
  } else {
    stop.throwIfStopped();
    try {
      addresses = await stop.race(lookupAll(host));
    } catch (err) {
      if (stop.stopped) throw stop.reason;
      throw new OutboundUrlError('URL_UNREACHABLE', `${host} did not resolve: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  if (addresses.length === 0) throw new OutboundUrlError('URL_UNREACHABLE', `${host} has no address`);
  for (const a of addresses) {
    const verdict = policy.check(a.address);
    if (!verdict.allowed) throw new OutboundUrlError('URL_FORBIDDEN', `${host} -> ${a.address} (${verdict.class})`);
  }
  return addresses[0]!;
}

/**
 * Ends one exchange early: on the caller's signal (with its reason) or at the exchange's own deadline (TIMED_OUT).
 * The deadline is a plain timer: an AbortController, its signal and their listeners per request cost more than the
 * rest of a status callback's client side apart from the HTTP client itself.
 */
class Stop {
  stopped = false;
  reason: unknown = undefined;
  readonly #signal: AbortSignal | undefined;
  #onAbort: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #then: ((reason: unknown) => void) | undefined;

  constructor(signal: AbortSignal | undefined, timeoutMs: number | undefined) {
    this.#signal = signal;
    if (signal?.aborted === true) {
      this.stopped = true;
      this.reason = signal.reason;
      return;
    }
    if (signal !== undefined) {
      this.#onAbort = () => this.stop(signal.reason);
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    if (timeoutMs !== undefined) this.#timer = setTimeout(() => this.stop(TIMED_OUT), timeoutMs);
  }

  stop(reason: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reason = reason;
    this.#then?.(reason);
  }

  /** `act` now if stopped already, else when stopped (one action at a time: the latest replaces the one before). */
  onStop(act: ((reason: unknown) => void) | undefined): void {
    this.#then = act;
    if (act !== undefined && this.stopped) act(this.reason);
  }

  throwIfStopped(): void {
    if (this.stopped) throw this.reason;
  }

  /** `work`, or the stop's reason if it comes first. */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.stopped) return Promise.reject(this.reason);
    return new Promise<T>((resolve, reject) => {
      this.onStop(reject);
      work.then(
        (v) => (this.onStop(undefined), resolve(v)),
        (e: unknown) => (this.onStop(undefined), reject(e)),
      );
    });
  }

  /** Releases the timer and the signal's listener. */
  done(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#onAbort !== undefined) this.#signal!.removeEventListener('abort', this.#onAbort);
    this.#onAbort = undefined;
    this.#then = undefined;
  }
}

/**
 * A URL as sent: parsed and serialised once per URL string (a status route's URL is sent over and over), kept
 * read-only. Bounded; emptied when full.
 */
interface Target extends Host {
  readonly url: URL;
  readonly https: boolean;
  readonly port: number | undefined;
  /** The request target: path and query. */
  readonly path: string;
  /** The Host header: the host, and the port unless it is the scheme's default (what Node would write). */
  readonly hostHeader: string;
  /** `user:password@` as Node sends it, an Authorization header (when the caller sets none). */
  readonly basicAuth: string | undefined;
  /** The URL as sent (request-url.ts). */
  readonly wire: string;
}

const MAX_TARGETS = 1024;
const targets = new Map<string, Target>();

function targetOf(input: string | URL): Target {
  if (typeof input !== 'string') return toTarget(toUrl(input));
  let target = targets.get(input);
  if (target === undefined) {
    target = toTarget(toUrl(input));
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(input, target);
  }
  return target;
}

function toTarget(url: URL): Target {
  const auth =
    url.username !== '' || url.password !== ''
      ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
      : undefined;
  return {
    ...hostOf(url),
    url,
    https: url.protocol === 'https:',
    port: url.port === '' ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    hostHeader: url.host,
    basicAuth: auth,
    wire: requestUrl(url),
  };
}

/** A request as sent: its method in upper case, headers checked (headersOf), body in bytes. */
interface Outgoing {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
}

/** One HTTP exchange with the connection pinned to `to`, as a web Response; resolves once its headers arrived. */
async function exchange(target: Target, to: Pinned, out: Outgoing, signal: AbortSignal): Promise<Response> {
  // The signal aborts the exchange until the reply's body has been read or dropped.
  const stop = new Stop(signal, undefined);
  let res: IncomingMessage;
  try {
    res = await open(target, to, out, stop);
  } catch (err) {
    stop.done();
    throw err;
  }
  res.on('close', () => stop.done());
  const status = res.statusCode!;
  const h = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    try {
      h.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
    } catch {
      // A header value fetch would refuse; it is dropped rather than failing the exchange.
    }
  }
  const empty = NULL_BODY.has(status) || out.method === 'HEAD';
  if (empty) res.resume();
  const stream = empty ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>);
  const response = new Response(stream, { status, statusText: res.statusMessage ?? '', headers: h });
  // The URL as sent (request-url.ts): what a webhook's signature covers and its receiver can rebuild.
  Object.defineProperty(response, 'url', { value: target.wire });
  return response;
}

/**
 * Sends one request with the connection pinned to `to`; resolves with the reply once its headers arrived (a status
 * outside 200-599 is refused). A stop destroys the request, and with it the reply, until `stop.done()`.
 *
 * The headers go to Node as a list, Host first (the URL's host, as Node writes it) and the Authorization of a URL's
 * `user:password@` unless one is given: Node then checks each name and value as it writes them, without building its
 * own map of them first.
 */
function open(target: Target, to: Pinned, out: Outgoing, stop: Stop): Promise<IncomingMessage> {
  stop.throwIfStopped();
  const headers: string[] = [];
  if (out.headers.host === undefined) headers.push('host', target.hostHeader);
  for (const name in out.headers) {
    if (name === 'content-length' && out.body !== undefined) continue;
    headers.push(name, out.headers[name]!);
  }
  if (target.basicAuth !== undefined && out.headers.authorization === undefined) {
    headers.push('authorization', target.basicAuth);
  }
  if (out.body !== undefined) headers.push('content-length', String(out.body.length));
  const lookup: LookupFunction = (_host, opts, done) => {
    if (opts.all) done(null, [{ address: to.address, family: to.family }]);
    else done(null, to.address, to.family);
  };
  return new Promise<IncomingMessage>((resolve, reject) => {
    const options = {
      protocol: target.https ? 'https:' : 'http:',
      hostname: target.host,
      port: target.port,
      path: target.path,
      method: out.method,
      headers,
      lookup,
      agent: agentFor(target, to),
    };
    const req = target.https ? https.request(options) : http.request(options);
    stop.onStop((reason) => req.destroy(reason as Error));
    req.on('error', (err) => {
      if (stop.stopped) reject(stop.reason);
      else reject(new OutboundUrlError('URL_UNREACHABLE', `${target.url.origin}: ${describe(err)}`, { cause: err }));
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 599) {
        res.destroy();
        reject(new OutboundUrlError('URL_UNREACHABLE', `${target.url.origin} answered status ${status}`));
        return;
      }
      resolve(res);
    });
    req.end(out.body);
  });
}

/** A reply's headers, read by name in any case (the part of fetch's Headers the switch's callers use). */
export interface ReplyHeaders {
  get(name: string): string | null;
}

/** A whole reply, read into memory by `guardedRequest`. */
export interface GuardedReply {
  readonly status: number;
  readonly headers: ReplyHeaders;
  /** The body as received; empty when it was dropped (`dropBody`). */
  readonly body: Buffer;
  /** The URL as sent (request-url.ts). */
  readonly url: string;
}

export interface GuardedRequestInit {
  readonly method?: string;
  /** Names and values as fetch takes them in a plain object; checked the same way. */
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
  /**
   * Aborts the exchange, until the whole body has been read; the promise then rejects with its reason. At least one
   * of `signal` and `timeoutMs` is given.
   */
  readonly signal?: AbortSignal;
  /** The whole exchange's deadline (resolution, connection, reply and body): past it, rejects with TIMED_OUT. */
  readonly timeoutMs?: number;
  /** The longest body read: a longer one rejects with ReplyTooLargeError and its connection is closed. */
  readonly maxBytes: number;
  /**
   * The body is not wanted: read and dropped, so that its kept-alive connection serves the next request; a body
   * longer than `maxBytes` closes the connection and the reply is answered all the same.
   */
  readonly dropBody?: boolean;
}

/** A reply body longer than `maxBytes`, with the reply's status. */
export class ReplyTooLargeError extends Error {
  constructor(
    readonly maxBytes: number,
    readonly status: number,
  ) {
    super(`the reply (HTTP ${status}) was longer than ${maxBytes} bytes`);
    this.name = 'ReplyTooLargeError';
  }
}

/**
 * One request under the same checks as the guarded fetch, with the reply read whole into a Buffer: for the switch's
 * own hot paths (a call's webhook, a status callback), which read small bodies whole. It skips what a web Response
 * costs (a web stream over the socket, a Headers object, a reader's promise per chunk), about a third of a POST's
 * client CPU. A body that is not wanted is drained, not cancelled: cancelling the web stream closes the kept-alive
 * connection, so every status callback would open a new one. Redirects are not followed:
 * a 3xx is returned as any other status (fetch's `redirect: 'manual'`, which both callers used).
 */
export async function guardedRequest(
  input: string | URL,
  init: GuardedRequestInit,
  policy: UrlPolicy,
): Promise<GuardedReply> {
  if (init.signal === undefined && init.timeoutMs === undefined) {
    throw new TypeError('guardedRequest needs a signal or a timeoutMs');
  }
  const target = targetOf(input);
  const stop = new Stop(init.signal, init.timeoutMs);
  try {
    const address = await pin(target, policy, stop);
    const out = {
      method: (init.method ?? 'GET').toUpperCase(),
      headers: headersOf(init.headers),
      body: toBuffer(init.body),
    };
    const res = await open(target, address, out, stop);
    const body = await readWhole(res, init.maxBytes, init.dropBody === true, stop);
    return { status: res.statusCode!, headers: new NodeReplyHeaders(res.headers), body, url: target.wire };
  } finally {
    stop.done();
  }
}

function readWhole(res: IncomingMessage, maxBytes: number, drop: boolean, stop: Stop): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        if (drop) {
          res.destroy();
          resolve(EMPTY);
        } else res.destroy(new ReplyTooLargeError(maxBytes, res.statusCode!));
      } else if (!drop) chunks.push(chunk);
    });
    res.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    res.once('error', (err) => reject(stop.stopped ? stop.reason : err));
    // A stop after the headers destroys the request (see open): the reply then errs or closes unfinished.
    res.once('close', () => {
      if (res.complete) return;
      reject(stop.stopped ? stop.reason : new OutboundUrlError('URL_UNREACHABLE', 'the reply was cut short'));
    });
  });
}

const EMPTY = Buffer.alloc(0);

/**
 * ReplyHeaders over Node's parsed headers (names already in lower case; repeated ones joined as fetch does). Holds
 * the headers alone, not the reply, whose socket serves the next request.
 */
class NodeReplyHeaders implements ReplyHeaders {
  readonly #headers: IncomingHttpHeaders;
  constructor(headers: IncomingHttpHeaders) {
    this.#headers = headers;
  }
  get(name: string): string | null {
    const v = this.#headers[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(', ') : v;
  }
}

/**
 * Kept-alive connections, one pool per (scheme, checked address, port, host name): a request reuses a connection
 * only to the very address its own resolution was just checked and pinned to, so a pooled socket can never carry a
 * request past the policy (a name that now resolves elsewhere is checked again and gets another pool, or is
 * refused). Saves a TCP (and TLS) handshake per call control request to a busy customer server. Bounded: at most
 * MAX_POOLS pools (the least recently used is closed), MAX_SOCKETS connections each, idle ones closed after 4 s.
 */
const MAX_POOLS = 256;
const MAX_SOCKETS = 64;
const IDLE_MS = 4000;
const pools = new Map<string, http.Agent>();

function agentFor(target: Target, to: Pinned): http.Agent {
  const key = `${target.https ? 'https' : 'http'}//${to.address}:${target.port ?? ''}/${target.host}`;
  let agent = pools.get(key);
  if (agent) {
    pools.delete(key); // re-inserted last: the map's order is least recently used first
  } else {
    // As many idle connections kept as may be busy: with 8 kept, a burst of 64 requests closed 56 connections after
    // their reply and opened them again for the next burst (2,442 connections for 5,900 status callbacks).
    const opts = { keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS, timeout: IDLE_MS };
    agent = target.https ? new https.Agent(opts) : new http.Agent(opts);
    if (pools.size >= MAX_POOLS) {
      const [oldest, old] = pools.entries().next().value as [string, http.Agent];
      pools.delete(oldest);
      old.destroy();
    }
  }
  pools.set(key, agent);
  return agent;
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? String(err);
}
