import type { Db } from './db.js';
import { nowIso, randomToken, sha256Hex } from './ids.js';

/**
 * Mints a single-use stream token. Only its SHA-256 is stored; the token itself goes to the caller once.
 * `accountId` is null for a staff token (platform-wide stream).
 */
export async function mintStreamToken(
  db: Db,
  accountId: string | null,
  ttlSeconds: number,
  staff = false,
  now: Date = new Date(),
): Promise<string> {
  const token = `st_${randomToken(24)}`;
  await db('stream_tokens').insert({
    token_hash: sha256Hex(token),
    account_id: accountId,
    staff,
    expires_at: new Date(now.getTime() + ttlSeconds * 1000).toISOString(),
    used_at: null,
  });
  return token;
}

/**
 * Spends a stream token: one conditional update (unused and unexpired), so of any number of concurrent
 * attempts exactly one wins. Returns who it belongs to, or null when unknown, used or expired.
 */
export async function consumeStreamToken(
  db: Db,
  token: string,
  now: Date = new Date(),
): Promise<{ accountId: string | null; staff: boolean } | null> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 200) return null;
  const hash = sha256Hex(token);
  const n = await db('stream_tokens')
    .where({ token_hash: hash })
    .whereNull('used_at')
    .where('expires_at', '>', nowIso(now))
    .update({ used_at: nowIso(now) });
  if (n !== 1) return null;
  const r = await db('stream_tokens').where({ token_hash: hash }).first();
  return r ? { accountId: r.account_id ?? null, staff: Boolean(r.staff) } : null;
}

/** Removes tokens that expired before `olderThan` (housekeeping). */
export async function purgeStreamTokens(db: Db, olderThan: Date): Promise<number> {
  return db('stream_tokens').where('expires_at', '<', olderThan.toISOString()).delete();
}
