import type { Db } from './db.js';
import { onWrites } from './notices.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';
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
  await insertRows(db, 'phone_tokens', [row]);
  return normalise({ ...row, revoked_at: null });
}

/** The end-user's most recent tokens, newest first, at most `limit`. */
export async function recentPhoneTokens(
  db: Db,
  accountId: string,
  endUserId: string,
  limit: number,
): Promise<PhoneTokenRow[]> {
  const rows = await selectRows(
    db,
    'select * from "phone_tokens" where "account_id" = ? and "end_user_id" = ? order by "created_at" desc limit ?',
    [accountId, endUserId, limit],
  );
  return rows.map(normalise);
}

/** What a phone's digest is checked against: its end-user (if any) and that end-user's most recent tokens. */
export interface PhoneCredentials {
  /** Undefined when the account has no such extension (or it is deleted). */
  endUserId: string | undefined;
  isActive: boolean;
  /** Newest first, at most `limit`. */
  tokens: PhoneTokenRow[];
}

const CREDENTIALS_SQL =
  'select u.id as user_id, u.is_active as user_active, t.* from end_users u ' +
  'left join phone_tokens t on t.end_user_id = u.id and t.account_id = u.account_id ' +
  'where u.account_id = ? and u.extension_number = ? and u.deleted_at is null ' +
  'order by t.created_at desc limit ?';

/**
 * The end-user with this extension in this account (enabled or not, not deleted) and its most recent tokens, in one
 * indexed query, made alike for unknown accounts ('') and unknown extensions (the registrar's lookups must not tell
 * them apart by the work done).
 */
export async function phoneCredentials(
  db: Db,
  accountId: string,
  extension: string,
  limit: number,
): Promise<PhoneCredentials> {
  // Fixed text: the registrar runs this for every authenticated REGISTER (the text is prepared once).
  const rows: any[] = await selectRows(db, CREDENTIALS_SQL, [accountId, extension, limit]);
  const first = rows[0];
  return {
    endUserId: first?.user_id,
    isActive: Boolean(first?.user_active),
    tokens: rows.filter((r) => r.id != null).map(({ user_id: _u, user_active: _a, ...t }) => normalise(t)),
  };
}

export async function findPhoneToken(db: Db, id: string): Promise<PhoneTokenRow | undefined> {
  const r = await firstRow(db, 'select * from "phone_tokens" where "id" = ? limit 1', [id]);
  return r ? normalise(r) : undefined;
}

/** Revokes a token of the account; false when the account has no such token. Revoking twice is harmless. */
export async function revokePhoneToken(db: Db, accountId: string, id: string): Promise<boolean> {
  const r = await firstRow(db, 'select "revoked_at" from "phone_tokens" where "account_id" = ? and "id" = ? limit 1', [
    accountId,
    id,
  ]);
  if (!r) return false;
  if (!r.revoked_at)
    await runSqlCount(
      db,
      'update "phone_tokens" set "revoked_at" = ? where "account_id" = ? and "id" = ?',
      [nowIso(), accountId, id],
      { table: 'phone_tokens', columns: ['revoked_at'] },
    );
  return true;
}

export const phoneTokenIsValid = (t: PhoneTokenRow, now: Date = new Date()): boolean =>
  !t.revoked_at && t.expires_at > now.toISOString();

/**
 * Of `ids`, the tokens that no longer authenticate anyone: revoked, expired at `now`, of an end-user disabled or
 * deleted, or no longer stored (phoneTokenIsValid plus the end-user's state, in one query per 500 ids).
 */
export async function unusablePhoneTokenIds(db: Db, ids: Iterable<string>, now: Date): Promise<Set<string>> {
  const all = [...new Set(ids)];
  const usable = new Set<string>();
  for (let i = 0; i < all.length; i += 500) {
    const some = all.slice(i, i + 500);
    const rows = await selectRows(
      db,
      'select "t"."id" from "phone_tokens" as "t" inner join "end_users" as "u" on "u"."id" = "t"."end_user_id" ' +
        `where "t"."id" in (${some.map(() => '?').join(', ')}) and "t"."revoked_at" is null and "t"."expires_at" > ? ` +
        'and "u"."is_active" = ? and "u"."deleted_at" is null',
      [...some, now.toISOString(), true],
    );
    for (const r of rows as Array<{ id: string }>) usable.add(r.id);
  }
  // A token no longer stored (its end-user deleted, by another process too) is unusable as well.
  return new Set(all.filter((id) => !usable.has(id)));
}

/** end_users columns the registrar writes on every registration: they never change a phone's credentials. */
const REGISTRATION_COLUMNS = new Set(['registration_state', 'last_registered_at']);

/** Whether a write may change what phoneCredentials returns (a table undefined: any table may have changed). */
function changesCredentials(table: string | undefined, columns: readonly string[] | undefined): boolean {
  if (table === undefined || table === 'phone_tokens') return true;
  if (table !== 'end_users') return false;
  return columns === undefined || columns.length === 0 || columns.some((c) => !REGISTRATION_COLUMNS.has(c));
}

/**
 * Calls `changed()` whenever a write of the store `db` (its root object; transactions included, store/notices.ts)
 * may change what phoneCredentials returns: as a write to phone_tokens or to end_users (other than the
 * registration columns) is sent, after it ran, and as a transaction that made one commits or rolls back and after
 * that. A cache that drops its entries at each call, and keeps no read that began before the latest call, never
 * holds a value from before a write (a read on another connection during the transaction sees the old rows: the
 * call at its end drops them). Returns the unsubscribe.
 */
export function onCredentialWrites(db: Db, changed: () => void): () => void {
  const openTx = new Set<number>();
  return onWrites(db, (n) => {
    if (n.kind === 'write') {
      if (!changesCredentials(n.table, n.columns)) return;
      if (n.tx !== undefined && !n.done) openTx.add(n.tx);
      changed();
    } else if (openTx.has(n.tx)) {
      if (n.done) openTx.delete(n.tx);
      changed();
    }
  });
}
