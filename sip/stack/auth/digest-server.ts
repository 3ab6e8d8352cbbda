/**
 * Server-side digest authentication (RFC 3261 §22, RFC 7616, RFC 8760): challenges offer SHA-256 and MD5
 * (SHA-256 first, RFC 8760 §2.4), qop=auth, nonces signed by us, single use, with a lifetime; a correct digest
 * over an expired or already-used nonce earns `stale=true` so the client retries without asking its user
 * (RFC 7616 §3.3).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { detached, systemClock, type Clock } from '../../../kit/index.js';
import { formatUri, parseUri, type SipRequest, type SipUri, type Uri } from '../message/index.js';
import { HmacSha256 } from './hmac.js';
import { hash, normalizeAlgorithm, parseAuthHeader, type DigestAlgorithm } from './digest.js';

export interface DigestServerOptions {
  realm: string;
  /** Offered in this order (default SHA-256 then MD5). */
  algorithms?: DigestAlgorithm[];
  /** How long a nonce may be used, default 30 s. */
  nonceTtlMs?: number;
  /** Challenge as a proxy (407, Proxy-Authenticate) instead of 401. */
  proxy?: boolean;
  clock?: Pick<Clock, 'now'>;
  /**
   * Whether a digest-uri with no user names this server (its domains, its addresses, with or without a port), for
   * the clients that sign the server rather than the Request-URI. Default: the address and port the request
   * arrived on, when that is a real address (a socket bound to 0.0.0.0 or :: knows none).
   */
  namesServer?: (uri: SipUri, req: SipRequest) => boolean;
}

export type PasswordLookup = (username: string, realm: string) => string | undefined | Promise<string | undefined>;

export type DigestVerdict =
  | { ok: true; username: string; algorithm: DigestAlgorithm }
  | {
      ok: false;
      stale: boolean;
      /**
       * `uri-mismatch`: the digest-uri names neither the Request-URI nor this server (RFC 3261 §22.4): credentials
       * made for another resource, which no password makes right.
       */
      reason: 'missing' | 'malformed' | 'uri-mismatch' | 'unknown-user' | 'wrong' | 'stale';
    };

/**
 * A request's digest credentials for one realm, read once and found well-formed, naming the Request-URI and
 * carrying a nonce this server issued: ready to be tried against each password the user may have
 * (DigestServer.check), then settled once one matched (DigestServer.settle).
 */
export class DigestAttempt {
  readonly ok = true;
  /** H(method:digest-uri): the same for every password tried. */
  readonly #ha2: string;

  constructor(
    readonly username: string,
    readonly algorithm: DigestAlgorithm,
    readonly realm: string,
    readonly nonce: string,
    /** When the nonce was issued (server clock, ms). */
    readonly issuedAt: number,
    readonly response: string,
    readonly nc: string,
    readonly cnonce: string,
    method: string,
    uri: string,
  ) {
    this.#ha2 = hash(algorithm, `${method}:${uri}`);
  }

  /** The request-digest (RFC 7616 §3.4.1, qop=auth) this password gives. */
  expected(password: string): string {
    const ha1 = hash(this.algorithm, `${this.username}:${this.realm}:${password}`);
    return hash(this.algorithm, `${ha1}:${this.nonce}:${this.nc}:${this.cnonce}:auth:${this.#ha2}`);
  }
}

type Refusal = Extract<DigestVerdict, { ok: false }>;

export class DigestServer {
  readonly realm: string;
  readonly #algorithms: DigestAlgorithm[];
  readonly #ttl: number;
  readonly #proxy: boolean;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #namesServer: (uri: SipUri, req: SipRequest) => boolean;
  /** Tags nonces under this server's secret (32 random bytes). */
  readonly #hmac = new HmacSha256(randomBytes(32));
  /** Nonces already accepted once, with the time they stop mattering. */
  readonly #used = new Map<string, number>();
  /** Moves at each nonce; starts anywhere (48 random bits). */
  #counter = randomBytes(6).readUIntBE(0, 6);

  constructor(opts: DigestServerOptions) {
    this.realm = opts.realm;
    this.#algorithms = opts.algorithms ?? ['SHA-256', 'MD5'];
    this.#ttl = opts.nonceTtlMs ?? 30_000;
    this.#proxy = opts.proxy ?? false;
    this.#clock = opts.clock ?? systemClock;
    this.#namesServer = opts.namesServer ?? arrivedAt;
  }

  /** The status to answer with (401 or 407). */
  get status(): number {
    return this.#proxy ? 407 : 401;
  }

  /** Challenge headers to put on the 401/407: one per algorithm. */
  challenge(opts: { stale?: boolean } = {}): Record<string, string[]> {
    const nonce = this.#newNonce();
    const name = this.#proxy ? 'Proxy-Authenticate' : 'WWW-Authenticate';
    const values = this.#algorithms.map(
      (a) =>
        `Digest realm="${this.realm}", nonce="${nonce}", algorithm=${a}, qop="auth"` +
        (opts.stale ? ', stale=true' : ''),
    );
    return { [name]: values };
  }

  /**
   * `<issued, base 36>.<counter, base 36>.<HMAC-SHA256 of both under this server's secret>`: unique (the counter
   * moves at each nonce), unforgeable and unpredictable (the tag), and telling its own age (RFC 7616 §3.3 and
   * §5.5: a time-stamp and a hash under a server secret), without a draw of the system's random source per
   * challenge (~4 µs each). Single use is enforced on acceptance (#used).
   */
  #newNonce(): string {
    this.#counter = (this.#counter + 1) % 2 ** 48;
    const stamp = this.#clock.now().toString(36) + '.' + this.#counter.toString(36);
    return stamp + '.' + this.#sign(stamp);
  }

  #sign(stamp: string): string {
    return this.#hmac.tag(stamp).slice(0, 22);
  }

  /** Checks the request's credentials for our realm. */
  async verify(req: SipRequest, lookup: PasswordLookup): Promise<DigestVerdict> {
    const a = this.parse(req);
    if (!a.ok) return a;
    const password = await lookup(a.username, this.realm);
    if (password === undefined) return { ok: false, stale: false, reason: 'unknown-user' };
    if (!this.check(a, password)) return { ok: false, stale: false, reason: 'wrong' };
    return this.settle(a);
  }

  /**
   * The request's credentials for our realm, or why they cannot be right whatever the password: none ('missing'),
   * malformed, for another Request-URI ('uri-mismatch'), or over a nonce we did not issue ('wrong'). Parsed once
   * for all the passwords a user may have.
   */
  parse(req: SipRequest): DigestAttempt | Refusal {
    const headerName = this.#proxy ? 'proxy-authorization' : 'authorization';
    const creds = req.headers
      .getAll(headerName)
      .map(parseAuthHeader)
      .find((c) => c && c.scheme.toLowerCase() === 'digest' && c.params.get('realm') === this.realm);
    // An unknown scheme (RFC 4475 regaut01) or another realm counts as no credentials: challenge.
    if (!creds) return { ok: false, stale: false, reason: 'missing' };
    const p = creds.params;
    const algorithm = normalizeAlgorithm(p.get('algorithm'));
    const username = p.get('username');
    const nonce = p.get('nonce');
    const uri = p.get('uri');
    const response = p.get('response');
    if (!algorithm || !this.#algorithms.includes(algorithm) || !username || !nonce || !uri || !response) {
      return { ok: false, stale: false, reason: 'malformed' };
    }
    const qop = p.get('qop');
    const nc = p.get('nc');
    const cnonce = p.get('cnonce');
    if (qop !== 'auth' || !cnonce || !nc) return { ok: false, stale: false, reason: 'malformed' };
    // RFC 3261 §22.4 and RFC 2617 §3.2.2.5: the digest-uri must name the Request-URI, or a digest computed for one
    // request could authorise another. Compared as resources after parsing both: scheme, user, host and port must
    // be the same (host case aside); URI parameters and headers are not compared, because common clients put
    // fewer of them in the digest-uri than in the Request-URI (SIPp 3.6 signs `sip:host:port` for a Request-URI
    // `sip:host:port;transport=UDP`), and a parameter does not name another resource to authorise.
    // One more form is accepted: a digest-uri naming this server itself (no user; `namesServer`), which is what
    // SIPp 3.6 signs whatever the Request-URI (`sip:<the address it sent to>:<port>`); it names no other resource.
    const digestUri = parseUri(uri);
    if (!digestUri || (!sameResource(digestUri, req.uri) && !this.#namesThisServer(digestUri, req))) {
      return { ok: false, stale: false, reason: 'uri-mismatch' };
    }
    const parts = nonce.split('.');
    if (parts.length !== 3 || !safeEqual(this.#sign(`${parts[0]}.${parts[1]}`), parts[2])) {
      return { ok: false, stale: false, reason: 'wrong' }; // not our nonce
    }
    const issued = parseInt(parts[0], 36);
    return new DigestAttempt(
      username,
      algorithm,
      this.realm,
      nonce,
      issued,
      response.toLowerCase(),
      nc,
      cnonce,
      req.method,
      uri,
    );
  }

  #namesThisServer(u: Uri, req: SipRequest): boolean {
    return 'host' in u && u.user === undefined && this.#namesServer(u, req);
  }

  /** Whether the attempt's digest was made with `password` (compared in constant time). */
  check(a: DigestAttempt, password: string): boolean {
    return safeEqual(a.expected(password), a.response);
  }

  /**
   * After check() found the digest right: accepted, and its nonce spent; or only stale, when the nonce has expired
   * or was accepted once already (a replay), so the client retries with a fresh one (RFC 7616 §3.3).
   */
  settle(a: DigestAttempt): DigestVerdict {
    const now = this.#clock.now();
    this.#prune(now);
    if (now - a.issuedAt > this.#ttl || this.#used.has(a.nonce)) return { ok: false, stale: true, reason: 'stale' };
    // A copy: the nonce is cut from the request, whose whole text it would keep alive for the nonce's lifetime.
    this.#used.set(detached(a.nonce), a.issuedAt + this.#ttl);
    return { ok: true, username: a.username, algorithm: a.algorithm };
  }

  /**
   * Forgets used nonces that have expired (an expired nonce is refused as stale anyway). The map is in the order
   * nonces were used, close to the order they expire in, so the walk stops at the first one still live: the cost
   * is the number forgotten, not the number held (a full walk would visit every nonce of the last TTL per request).
   * An entry left behind a longer-lived one is forgotten a little later; none is forgotten before it expires.
   */
  #prune(now: number): void {
    if (this.#used.size < 1024) return;
    for (const [n, until] of this.#used) {
      if (until >= now) return;
      this.#used.delete(n);
    }
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Whether two URIs name the same resource, which is what a digest-uri is compared on: for SIP URIs scheme, user,
 * password, host (lower-cased by the parser) and port, not parameters or headers; others as written in full.
 */
function sameResource(a: Uri, b: Uri): boolean {
  if (!('host' in a) || !('host' in b)) return formatUri(a) === formatUri(b);
  return (
    a.scheme === b.scheme && a.user === b.user && a.password === b.password && a.host === b.host && a.port === b.port
  );
}

/** The unspecified addresses a socket bound to every interface reports as its own. */
const UNSPECIFIED = new Set(['0.0.0.0', '::', '[::]']);

/** `sip:<the address the request arrived on>[:<its port>]`: the server itself, when the socket knows its address. */
function arrivedAt(u: SipUri, req: SipRequest): boolean {
  const local = req.source;
  if (!local?.localAddress || UNSPECIFIED.has(local.localAddress)) return false;
  const host = u.host.startsWith('[') ? u.host.slice(1, -1) : u.host; // a socket's IPv6 address has no brackets
  return host === local.localAddress.toLowerCase() && (u.port === undefined || u.port === local.localPort);
}
