/**
 * Digest computations shared by the server and client helpers (RFC 3261 §22.4, RFC 7616 §3.4, RFC 8760 for
 * SHA-256 in SIP): parsing of challenge and credential parameters, and the response hash.
 */
import { hash as oneShot } from 'node:crypto';
import { skipQuoted, unquote } from '../message/index.js';

export type DigestAlgorithm = 'MD5' | 'SHA-256';

/** Hex digest of `text` (UTF-8), one call into OpenSSL (a Hash object per call costs three times as much). */
export function hash(algorithm: DigestAlgorithm, text: string): string {
  return oneShot(algorithm === 'MD5' ? 'md5' : 'sha256', text, 'hex');
}

export function normalizeAlgorithm(a: string | undefined): DigestAlgorithm | undefined {
  const v = (a ?? 'MD5').toUpperCase();
  return v === 'MD5' ? 'MD5' : v === 'SHA-256' ? 'SHA-256' : undefined;
}

/** Splits `Digest a=b, c="d"` into its scheme and lower-cased parameter names with unquoted values. */
export function parseAuthHeader(value: string): { scheme: string; params: Map<string, string> } | null {
  const m = /^\s*([A-Za-z0-9\-._~+/]+)\s*/.exec(value);
  if (!m) return null;
  const params = new Map<string, string>();
  const s = value.slice(m[0].length);
  let i = 0;
  while (i < s.length) {
    while (i < s.length && isBlankOrComma(s.charCodeAt(i), s, i)) i++;
    if (i >= s.length) break;
    const eq = s.indexOf('=', i);
    if (eq < 0) return { scheme: m[1], params }; // token68 (Bearer) or junk: no parameters
    const name = s.slice(i, eq).trim().toLowerCase();
    let j = eq + 1;
    while (s[j] === ' ' || s[j] === '\t') j++;
    let val: string;
    if (s[j] === '"') {
      const end = skipQuoted(s, j);
      if (end < 0) return null;
      val = unquote(s.slice(j, end));
      i = end;
    } else {
      let k = j;
      while (k < s.length && s[k] !== ',') k++;
      val = s.slice(j, k).trim();
      i = k;
    }
    params.set(name, val);
  }
  return { scheme: m[1], params };
}

/** `/[\s,]/` at `s[i]`, without the regex for the ASCII characters every header is made of. */
function isBlankOrComma(c: number, s: string, i: number): boolean {
  if (c < 0x80) return c === 0x20 || c === 0x2c || (c >= 0x09 && c <= 0x0d);
  return /\s/.test(s[i]);
}

export interface DigestInput {
  algorithm: DigestAlgorithm;
  username: string;
  realm: string;
  password: string;
  method: string;
  uri: string;
  nonce: string;
  qop?: string;
  nc?: string;
  cnonce?: string;
}

/** The request-digest of RFC 7616 §3.4.1 (qop=auth) or RFC 2069 compatibility (no qop). */
export function digestResponse(d: DigestInput): string {
  const ha1 = hash(d.algorithm, `${d.username}:${d.realm}:${d.password}`);
  const ha2 = hash(d.algorithm, `${d.method}:${d.uri}`);
  if (d.qop) return hash(d.algorithm, `${ha1}:${d.nonce}:${d.nc}:${d.cnonce}:${d.qop}:${ha2}`);
  return hash(d.algorithm, `${ha1}:${d.nonce}:${ha2}`);
}
