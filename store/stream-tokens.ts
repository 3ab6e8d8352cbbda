import type { Db } from './db.js';
import { nowIso, randomToken, sha256Hex } from './ids.js';
import { deleteInBatches, firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';

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
  await insertRows(db, 'stream_tokens', [
    {
      token_hash: sha256Hex(token),
      account_id: accountId,
      staff,
      api_key_id: apiKeyId,
      expires_at: new Date(now.getTime() + ttlSeconds * 1000).toISOString(),
      used_at: null,
    },
  ]);
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
  const n = await runSqlCount(
    db,
    'update "stream_tokens" set "used_at" = ? where "token_hash" = ? and "used_at" is null and "expires_at" > ?',
    [nowIso(now), hash, nowIso(now)],
    { table: 'stream_tokens', columns: ['used_at'] },
  );
  if (n !== 1) return null;
  const r = (await firstRow(db, 'select * from "stream_tokens" where "token_hash" = ? limit 1', [hash])) as
    { account_id: string | null; staff: unknown; api_key_id: string | null } | undefined;
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
  const marks = (n: number): string => Array(n).fill('?').join(', ');
  for (let i = 0; i < accountIds.length; i += 500) {
    const ids = accountIds.slice(i, i + 500);
    const sql = `select "id" from "accounts" where "id" in (${marks(ids.length)}) and "status" = ?`;
    for (const r of await selectRows(db, sql, [...ids, 'active'])) activeAccounts.add(r.id as string);
  }
  for (let i = 0; i < apiKeyIds.length; i += 500) {
    const ids = apiKeyIds.slice(i, i + 500);
    const sql = `select "id" from "api_keys" where "id" in (${marks(ids.length)}) and "is_active" = ?`;
    for (const r of await selectRows(db, sql, [...ids, true])) activeKeys.add(r.id as string);
  }
  return {
    accounts: accountIds.filter((id) => !activeAccounts.has(id)),
    apiKeys: apiKeyIds.filter((id) => !activeKeys.has(id)),
  };
}

/** Removes tokens that expired before `olderThan` (housekeeping). */
export async function purgeStreamTokens(db: Db, olderThan: Date, signal?: AbortSignal): Promise<number> {
  return deleteInBatches(db, 'stream_tokens', ['token_hash'], '"expires_at" < ?', [olderThan.toISOString()], signal);
}
