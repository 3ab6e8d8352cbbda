import { createHmac, timingSafeEqual } from 'node:crypto';
import { EventCodes } from '../events/index.js';
import { SignJWT, jwtVerify } from 'jose';
import { findEndUserAnyAccount, findPhoneToken, phoneTokenIsValid, type Db } from '../store/index.js';

/**
 * Keys derived from the one server secret, one per use, so a signature made for one purpose (a recording URL)
 * can never pass as another (a phone token).
 */
export function deriveKey(secret: string, purpose: 'phone-token' | 'recording-url'): Buffer {
  return createHmac('sha256', secret).update(`simu:${purpose}`).digest();
}

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

// ---- phone tokens ----

const ISSUER = 'simu';
const AUDIENCE = 'simu:phone';

export interface PhoneTokenClaims {
  tokenId: string;
  accountId: string;
  endUserId: string;
  extension: string;
  maxConcurrent: number;
  /** Unix seconds. */
  expiresAt: number;
}

export async function signPhoneToken(secret: string, c: PhoneTokenClaims, issuedAt: number): Promise<string> {
  return new SignJWT({ acc: c.accountId, ext: c.extension, mc: c.maxConcurrent })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(c.endUserId)
    .setJti(c.tokenId)
    .setIssuedAt(issuedAt)
    .setExpirationTime(c.expiresAt)
    .sign(deriveKey(secret, 'phone-token'));
}

export type PhoneTokenRejection = 'malformed' | 'expired' | 'revoked' | 'unknown' | 'end_user_inactive';

export class PhoneTokenRejectedError extends Error {
  readonly code = EventCodes.phoneRejected;
  readonly status = 401;
  constructor(readonly reason: PhoneTokenRejection) {
    super(`phone token rejected: ${reason}`);
    this.name = 'PhoneTokenRejectedError';
  }
}

/**
 * Verifies a phone token for the registrar: the HS256 signature and expiry, then the stored row (so a revocation
 * takes effect at once, spec "Phone token valid → Revoke"), then the end-user (deleted or disabled identities
 * are refused). Throws PhoneTokenRejectedError (code AUTH.0401) with the reason.
 */
export async function verifyPhoneToken(
  db: Db,
  secret: string,
  token: string,
  now: Date = new Date(),
): Promise<PhoneTokenClaims> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, deriveKey(secret, 'phone-token'), {
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['HS256'],
      currentDate: now,
    }));
  } catch (e) {
    throw new PhoneTokenRejectedError((e as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'expired' : 'malformed');
  }
  const row = typeof payload.jti === 'string' ? await findPhoneToken(db, payload.jti) : undefined;
  if (!row || row.account_id !== payload.acc || row.end_user_id !== payload.sub)
    throw new PhoneTokenRejectedError('unknown');
  if (row.revoked_at) throw new PhoneTokenRejectedError('revoked');
  if (!phoneTokenIsValid(row, now)) throw new PhoneTokenRejectedError('expired');
  const user = await findEndUserAnyAccount(db, row.end_user_id);
  if (!user || !user.is_active || user.account_id !== row.account_id)
    throw new PhoneTokenRejectedError('end_user_inactive');
  return {
    tokenId: row.id,
    accountId: row.account_id,
    endUserId: row.end_user_id,
    extension: row.extension_number,
    maxConcurrent: row.max_concurrent,
    expiresAt: Math.floor(Date.parse(row.expires_at) / 1000),
  };
}
