import { SignJWT, jwtVerify } from 'jose';
import { EventCodes } from '../events/index.js';
import { deriveKey } from '../kit/index.js';
import {
  findEndUserAnyAccount,
  findPhoneToken,
  phoneTokenIsValid,
  type Db,
  type PhoneTokenRow,
} from '../store/index.js';

/**
 * Phone tokens (spec "Phone tokens"): the API signs them (POST /api/phone-tokens), the registrar verifies them
 * (digest with the token as password, or Authorization: Bearer, RFC 8898). One module for both, in the lower room.
 */

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
  return claimsOfRow(row);
}

/** The claims a token's stored row stands for (every claim but `iat`, which is not stored). */
export function claimsOfRow(row: PhoneTokenRow): PhoneTokenClaims {
  return {
    tokenId: row.id,
    accountId: row.account_id,
    endUserId: row.end_user_id,
    extension: row.extension_number,
    maxConcurrent: row.max_concurrent,
    expiresAt: Math.floor(Date.parse(row.expires_at) / 1000),
  };
}
