/**
 * Bearer tokens in SIP (RFC 8898): the token from `Authorization: Bearer <token>` is handed to a verifier the
 * application supplies; the challenge names the realm (RFC 8898 §3.1).
 */
import type { SipRequest } from '../message/index.js';

export type BearerVerifier<T> = (token: string) => T | undefined | Promise<T | undefined>;

/** The bearer token of a request, if it carries one. */
export function bearerToken(req: SipRequest): string | undefined {
  for (const v of req.headers.getAll('authorization')) {
    const m = /^\s*Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(v);
    if (m) return m[1];
  }
  return undefined;
}

/** Verifies a request's bearer token; undefined when there is none or the verifier refuses it. */
export async function verifyBearer<T>(req: SipRequest, verifier: BearerVerifier<T>): Promise<T | undefined> {
  const token = bearerToken(req);
  return token === undefined ? undefined : verifier(token);
}

/** The challenge for a 401 that invites a bearer token (RFC 8898 §3.1). */
export function bearerChallenge(realm: string, opts: { scope?: string; authzServer?: string } = {}): string {
  let v = `Bearer realm="${realm}"`;
  if (opts.scope) v += `, scope="${opts.scope}"`;
  if (opts.authzServer) v += `, authz_server="${opts.authzServer}"`;
  return v;
}
