import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../kit/index.js';

// ---- recording download URLs ----

export function recordingSignature(secret: string, uuid: string, exp: number): string {
  return createHmac('sha256', deriveKey(secret, 'recording-url')).update(`${uuid}.${exp}`).digest('base64url');
}

export function signRecordingUrl(baseUrl: string, secret: string, uuid: string, exp: number): string {
  const u = new URL(`/api/recordings/media/${encodeURIComponent(uuid)}`, baseUrl);
  u.searchParams.set('exp', String(exp));
  u.searchParams.set('sig', recordingSignature(secret, uuid, exp));
  return u.toString();
}

/** 'ok', 'expired' or 'bad' (signature does not match); compared in constant time. */
export function checkRecordingSignature(
  secret: string,
  uuid: string,
  exp: string | undefined,
  sig: string | undefined,
  nowSeconds: number,
): 'ok' | 'expired' | 'bad' {
  if (!exp || !sig || !/^\d{1,12}$/.test(exp)) return 'bad';
  const want = Buffer.from(recordingSignature(secret, uuid, Number(exp)));
  const got = Buffer.from(sig);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return 'bad';
  return Number(exp) < nowSeconds ? 'expired' : 'ok';
}

// ---- TURN credentials (coturn "TURN REST API" scheme, use-auth-secret) ----

/**
 * Time-limited TURN credentials: username `<expiry unix seconds>:<extension>`, credential
 * base64(HMAC-SHA1(static-auth-secret, username)), as coturn's --use-auth-secret checks them.
 */
export function turnCredentials(turnSecret: string, expiry: number, extension: string) {
  const username = `${expiry}:${extension}`;
  const credential = createHmac('sha1', turnSecret).update(username).digest('base64');
  return { username, credential };
}

export function iceServersFor(
  ice: { servers: Array<Record<string, unknown>>; turnUrls: string[]; turnSecret: string },
  expiry: number,
  extension: string,
): Array<Record<string, unknown>> {
  const out = ice.servers.map((s) => ({ ...s }));
  if (ice.turnSecret && ice.turnUrls.length > 0)
    out.push({ urls: ice.turnUrls, ...turnCredentials(ice.turnSecret, expiry, extension) });
  return out;
}
