import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * No user enumeration (RFC 3261 §26.2, RFC 7616 §5): an unknown user and a wrong password must get the same answer,
 * with the same headers, in the same time. These helpers make the timing part hold: an unknown user's credentials
 * are checked against a dummy secret with exactly the computation a real user's get, so the work done (hashes,
 * constant-time compare) is the same and the answer is always "no". See docs/security.md for the registrar's side.
 */
export interface DigestCredentials {
  username: string;
  realm: string;
  nonce: string;
  uri: string;
  /** The client's `response` parameter (hex). */
  response: string;
  /** The request method (REGISTER, INVITE, ...), the A2 of RFC 7616 §3.4.3. */
  method: string;
  /** RFC 7616 algorithms; absent means MD5 (RFC 2617). */
  algorithm?: string;
  qop?: string;
  nc?: string;
  cnonce?: string;
  /** The message body, for qop=auth-int. */
  body?: string;
}

/** A stored secret: the plain password (a phone token) or a precomputed H(username:realm:password). */
export type DigestSecret = string | { ha1: string };

function hashName(algorithm: string | undefined): { hash: 'md5' | 'sha256' | 'sha512-256'; sess: boolean } {
  const a = (algorithm ?? 'MD5').toUpperCase();
  const sess = a.endsWith('-SESS');
  const base = sess ? a.slice(0, -5) : a;
  if (base === 'SHA-256') return { hash: 'sha256', sess };
  if (base === 'SHA-512-256') return { hash: 'sha512-256', sess };
  return { hash: 'md5', sess };
}

const h = (hash: string, s: string): string => createHash(hash).update(s).digest('hex');

/** The response value the client should have sent (RFC 7616 §3.4.1; RFC 2069 form when there is no qop). */
export function expectedDigestResponse(c: DigestCredentials, secret: DigestSecret): string {
  const { hash, sess } = hashName(c.algorithm);
  let ha1 = typeof secret === 'string' ? h(hash, `${c.username}:${c.realm}:${secret}`) : secret.ha1;
  if (sess) ha1 = h(hash, `${ha1}:${c.nonce}:${c.cnonce ?? ''}`);
  const qop = c.qop?.toLowerCase();
  const a2 = qop === 'auth-int' ? `${c.method}:${c.uri}:${h(hash, c.body ?? '')}` : `${c.method}:${c.uri}`;
  const ha2 = h(hash, a2);
  if (qop === 'auth' || qop === 'auth-int') {
    return h(hash, `${ha1}:${c.nonce}:${c.nc ?? ''}:${c.cnonce ?? ''}:${qop}:${ha2}`);
  }
  return h(hash, `${ha1}:${c.nonce}:${ha2}`);
}

/** Compares in time that depends only on the expected length, never on where the strings differ. */
function sameHex(expected: string, given: string): boolean {
  const a = Buffer.from(expected.toLowerCase());
  const b = Buffer.from(given.toLowerCase());
  if (a.length !== b.length) {
    timingSafeEqual(a, a); // the same work as a compare, then no
    return false;
  }
  return timingSafeEqual(a, b);
}

/**
 * Checks digest credentials; with `secret` undefined (no such user, or a user who may not log in) it runs the same
 * computation against a dummy secret and answers false. Use this one entry point for every REGISTER/INVITE check,
 * so the unknown-user path and the wrong-password path are the same code.
 */
export function verifyDigestResponse(c: DigestCredentials, secret: DigestSecret | undefined): boolean {
  const ok = sameHex(expectedDigestResponse(c, secret ?? dummySecret()), c.response);
  return ok && secret !== undefined;
}

/**
 * For a registrar that verifies with another helper (the stack's digest code): call this where the user is unknown
 * (or locked out) instead of returning early. It spends the work of one verification and returns false.
 */
export function equaliseAuthFailure(c: DigestCredentials): false {
  verifyDigestResponse(c, undefined);
  return false;
}

/**
 * For a registrar on the stack's `DigestServer`: wraps its password lookup so an unknown user (undefined) gets the
 * dummy secret instead. The server then computes the digest as for any user and answers `wrong`, never
 * `unknown-user`: the same work, the same verdict. Nothing can authenticate against the dummy (32 random bytes,
 * per process, never shown). Typed structurally, so this room needs nothing of the stack.
 */
export function withDummySecret<A extends unknown[]>(
  lookup: (...args: A) => string | undefined | Promise<string | undefined>,
): (...args: A) => Promise<string> {
  return async (...args: A) => (await lookup(...args)) ?? dummySecret();
}

let dummy: string | undefined;
/**
 * A random per-process secret as long as a phone token (`randomToken(32)`): no one can authenticate with it. What
 * an unknown user's digest is checked against, for a registrar that tries passwords itself (DigestServer.check).
 */
export function dummySecret(): string {
  dummy ??= randomBytes(32).toString('base64url');
  return dummy;
}
