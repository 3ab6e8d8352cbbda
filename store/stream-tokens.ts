import type { Db } from './db.js';
import { nowIso, randomToken, sha256Hex } from './ids.js';

/**
 * Mints a single-use stream token. Only its SHA-256 is stored; the token itself goes to the caller once.
 * `accountId` is null for a staff token (platform-wide stream); `apiKeyId` is the key that asked for it (the
 * stream closes the socket when that key is revoked).
 */
export async function mintStreamToken(
  db: Db,
  accountId: string | null,
  ttlSeconds: number,
  staff = false,
  now: Date = new Date(),
  apiKeyId: string | null = null,
): Promise<string> {
  const token = `st_${randomToken(24)}`;
  await db('stream_tokens').insert({
    token_hash: sha256Hex(token),
    account_id: accountId,
    staff,
    api_key_id: apiKeyId,
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
): Promise<{ accountId: string | null; staff: boolean; apiKeyId: string | null } | null> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 200) return null;
  const hash = sha256Hex(token);
  const n = await db('stream_tokens')
    .where({ token_hash: hash })
    .whereNull('used_at')
    .where('expires_at', '>', nowIso(now))
    .update({ used_at: nowIso(now) });
  if (n !== 1) return null;
  const r = await db('stream_tokens').where({ token_hash: hash }).first();
  return r ? { accountId: r.account_id ?? null, staff: Boolean(r.staff), apiKeyId: r.api_key_id ?? null } : null;
}

/**
 * Of the given accounts and API keys, the ones a stream socket may no longer serve: accounts that are not active
 * (or gone) and keys that are revoked (or gone). Two indexed lookups, whatever the number of sockets.
 */
export async function lapsedStreamPrincipals(
  db: Db,
  accountIds: string[],
  apiKeyIds: string[],
): Promise<{ accounts: string[]; apiKeys: string[] }> {
  const activeAccounts = new Set<string>();
  const activeKeys = new Set<string>();
  for (let i = 0; i < accountIds.length; i += 500)
    for (const r of await db('accounts')
      .whereIn('id', accountIds.slice(i, i + 500))
      .where({ status: 'active' })
      .select('id'))
      activeAccounts.add(r.id);
  for (let i = 0; i < apiKeyIds.length; i += 500)
    for (const r of await db('api_keys')
      .whereIn('id', apiKeyIds.slice(i, i + 500))
      .where({ is_active: true })
      .select('id'))
      activeKeys.add(r.id);
  return {
    accounts: accountIds.filter((id) => !activeAccounts.has(id)),
    apiKeys: apiKeyIds.filter((id) => !activeKeys.has(id)),
  };
}

/** Removes tokens that expired before `olderThan` (housekeeping). */
export async function purgeStreamTokens(db: Db, olderThan: Date): Promise<number> {
  return db('stream_tokens').where('expires_at', '<', olderThan.toISOString()).delete();
}
