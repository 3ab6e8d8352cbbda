/**
 * Client-side digest (RFC 3261 §22.2-22.3, RFC 8760): answers a 401/407 from a trunk or registrar. Picks the
 * strongest algorithm offered (SHA-256 over MD5), uses qop=auth when offered, and counts nc per nonce.
 */
import { randomBytes } from 'node:crypto';
import { formatUri, type SipRequest, type SipResponse } from '../message/index.js';
import { digestResponse, normalizeAlgorithm, parseAuthHeader, type DigestAlgorithm } from './digest.js';

export interface DigestCredentials {
  username: string;
  password: string;
  /** Answer only challenges for this realm (default: any). */
  realm?: string;
}

export class DigestClient {
  readonly #creds: DigestCredentials;
  readonly #nc = new Map<string, number>();

  constructor(creds: DigestCredentials) {
    this.#creds = creds;
  }

  /**
   * Adds Authorization (for 401) or Proxy-Authorization (for 407) to `req` in answer to `challenge`. Returns
   * false when no challenge there can be answered (unknown scheme or algorithm, other realm).
   */
  authorize(req: SipRequest, challenge: SipResponse): boolean {
    const proxy = challenge.status === 407;
    const offers = challenge.headers
      .getAll(proxy ? 'proxy-authenticate' : 'www-authenticate')
      .map(parseAuthHeader)
      .filter((c) => c && c.scheme.toLowerCase() === 'digest')
      .map((c) => ({ params: c!.params, algorithm: normalizeAlgorithm(c!.params.get('algorithm')) }))
      .filter((c): c is { params: Map<string, string>; algorithm: DigestAlgorithm } => c.algorithm !== undefined)
      .filter((c) => !this.#creds.realm || c.params.get('realm') === this.#creds.realm);
    const best = offers.find((o) => o.algorithm === 'SHA-256') ?? offers[0];
    if (!best) return false;
    const realm = best.params.get('realm') ?? '';
    const nonce = best.params.get('nonce') ?? '';
    const qops = (best.params.get('qop') ?? '').split(',').map((q) => q.trim());
    const qop = qops.includes('auth') ? 'auth' : undefined;
    const nc = (this.#nc.get(nonce) ?? 0) + 1;
    this.#nc.set(nonce, nc);
    const ncHex = nc.toString(16).padStart(8, '0');
    const cnonce = randomBytes(8).toString('hex');
    const uri = formatUri(req.uri);
    const response = digestResponse({
      algorithm: best.algorithm,
      username: this.#creds.username,
      realm,
      password: this.#creds.password,
      method: req.method,
      uri,
      nonce,
      qop,
      nc: ncHex,
      cnonce,
    });
    let value =
      `Digest username="${this.#creds.username}", realm="${realm}", nonce="${nonce}", uri="${uri}", ` +
      `response="${response}", algorithm=${best.algorithm}`;
    if (qop) value += `, qop=${qop}, nc=${ncHex}, cnonce="${cnonce}"`;
    const opaque = best.params.get('opaque');
    if (opaque !== undefined) value += `, opaque="${opaque}"`;
    req.headers.set(proxy ? 'proxy-authorization' : 'authorization', value);
    return true;
  }
}
