import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';

export interface PhoneTokenRow {
  id: string;
  account_id: string;
  end_user_id: string;
  extension_number: string;
  max_concurrent: number;
  expires_at: string;
  revoked_at: string | null;
  created_at: string;
  /** The JWT's `iat` (epoch seconds); null for tokens minted before migration 011. */
  issued_at: number | null;
}

const normalise = (r: any): PhoneTokenRow => ({
  ...r,
  max_concurrent: Number(r.max_concurrent),
  issued_at: r.issued_at == null ? null : Number(r.issued_at),
});

export async function insertPhoneToken(
  db: Db,
  input: {
    account_id: string;
    end_user_id: string;
    extension_number: string;
    max_concurrent: number;
    expires_at: string;
    issued_at: number;
  },
): Promise<PhoneTokenRow> {
  const row = { id: newId(), ...input, created_at: nowIso() };
  await db('phone_tokens').insert(row);
  return normalise({ ...row, revoked_at: null });
}

/** The end-user's most recent tokens, newest first, at most `limit`. */
export async function recentPhoneTokens(
  db: Db,
  accountId: string,
  endUserId: string,
  limit: number,
): Promise<PhoneTokenRow[]> {
  const rows = await db('phone_tokens')
    .where({ account_id: accountId, end_user_id: endUserId })
    .orderBy('created_at', 'desc')
    .limit(limit);
  return rows.map(normalise);
}

export async function findPhoneToken(db: Db, id: string): Promise<PhoneTokenRow | undefined> {
  const r = await db('phone_tokens').where({ id }).first();
  return r ? normalise(r) : undefined;
}

/** Revokes a token of the account; false when the account has no such token. Revoking twice is harmless. */
export async function revokePhoneToken(db: Db, accountId: string, id: string): Promise<boolean> {
  const r = await db('phone_tokens').where({ account_id: accountId, id }).first('revoked_at');
  if (!r) return false;
  if (!r.revoked_at) await db('phone_tokens').where({ account_id: accountId, id }).update({ revoked_at: nowIso() });
  return true;
}

export const phoneTokenIsValid = (t: PhoneTokenRow, now: Date = new Date()): boolean =>
  !t.revoked_at && t.expires_at > now.toISOString();

/**
 * Of `ids`, the tokens that no longer authenticate anyone: revoked, expired at `now`, or of an end-user disabled or
 * deleted (phoneTokenIsValid plus the end-user's state, in one query per 500 ids).
 */
export async function unusablePhoneTokenIds(db: Db, ids: Iterable<string>, now: Date): Promise<Set<string>> {
  const all = [...ids];
  const unusable = new Set<string>();
  for (let i = 0; i < all.length; i += 500) {
    const rows = await db('phone_tokens as t')
      .join('end_users as u', 'u.id', 't.end_user_id')
      .whereIn('t.id', all.slice(i, i + 500))
      .where((q) =>
        q
          .whereNotNull('t.revoked_at')
          .orWhere('t.expires_at', '<=', now.toISOString())
          .orWhere('u.is_active', false)
          .orWhereNotNull('u.deleted_at'),
      )
      .select('t.id');
    for (const r of rows as Array<{ id: string }>) unusable.add(r.id);
  }
  return unusable;
}
