import { inTransaction, type Db, type Tx } from './db.js';
import { insertRows, runSqlCount, selectRows } from './fixed-sql.js';
import { newId, nowIso, randomToken, sha256Hex } from './ids.js';
import { insertAccount, noteAuthWrite, type AccountRow } from './accounts.js';

export interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  is_active: boolean;
  last_used_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

const normalise = (r: any): ApiKeyRow => ({ ...r, is_active: Boolean(r.is_active) });

/** Keys are `sk_` plus 43 base64url characters (256 bits); only their SHA-256 is stored. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = `sk_${randomToken(32)}`;
  return { key, prefix: key.slice(0, 11), hash: sha256Hex(key) };
}

/** Stores a new key; `given` is a key made by the caller (the portal's session keys), otherwise one is generated. */
export async function insertApiKey(
  db: Db | Tx,
  accountId: string,
  name: string,
  given?: string,
): Promise<{ row: ApiKeyRow; key: string }> {
  const { key, prefix, hash } = given
    ? { key: given, prefix: given.slice(0, 11), hash: sha256Hex(given) }
    : generateApiKey();
  const row = {
    id: newId(),
    account_id: accountId,
    name,
    prefix,
    key_hash: hash,
    is_active: true,
    created_at: nowIso(),
  };
  await insertRows(db, 'api_keys', [row]);
  const [stored] = await selectRows(db, 'select * from "api_keys" where "id" = ? limit 1', [row.id]);
  return { row: normalise(stored), key };
}

/** Looks a presented key up by its hash (an index lookup on a fixed-length digest: no timing signal on the secret). */
export async function findApiKeyByHash(db: Db | Tx, hash: string): Promise<ApiKeyRow | undefined> {
  const [row] = await selectRows(db, 'select * from "api_keys" where "key_hash" = ? limit 1', [hash]);
  return row ? normalise(row) : undefined;
}

export async function listApiKeys(db: Db | Tx, accountId: string): Promise<ApiKeyRow[]> {
  const rows = await selectRows(db, 'select * from "api_keys" where "account_id" = ? order by "created_at" desc', [
    accountId,
  ]);
  return rows.map(normalise);
}

export async function revokeApiKey(db: Db | Tx, accountId: string, id: string): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "api_keys" set "is_active" = ?, "revoked_at" = ? where "account_id" = ? and "id" = ?',
    [false, nowIso(), accountId, id],
    'api_keys',
  );
  noteAuthWrite();
  return n > 0;
}

/** Revokes every active key with this name in any account (the portal's session keys at its start). */
export async function revokeApiKeysNamed(db: Db | Tx, name: string, at: string): Promise<number> {
  return runSqlCount(
    db,
    'update "api_keys" set "is_active" = ?, "revoked_at" = ? where "name" = ? and "is_active" = ?',
    [false, at, name, true],
    'api_keys',
  );
}

export async function touchApiKey(db: Db | Tx, id: string): Promise<void> {
  await runSqlCount(db, 'update "api_keys" set "last_used_at" = ? where "id" = ?', [nowIso(), id], 'api_keys');
}

/** A key found by its hash, with its account's row (one indexed join, for authentication). */
export interface ApiKeyWithAccount {
  apiKeyId: string;
  keyHash: string;
  active: boolean;
  account: AccountRow;
}

export async function findApiKeyWithAccount(db: Db | Tx, hash: string): Promise<ApiKeyWithAccount | undefined> {
  const [row] = await selectRows(db, KEY_WITH_ACCOUNT, [hash]);
  if (!row) return undefined;
  const { api_key_id, api_key_hash, api_key_active, ...account } = row;
  return {
    apiKeyId: String(api_key_id),
    keyHash: String(api_key_hash),
    active: Boolean(api_key_active),
    account: { ...account, balance_cents: Number(account.balance_cents) } as AccountRow,
  };
}

/** A new account and its first API key, in one transaction (both or neither). The key is returned to show once. */
export async function insertAccountWithApiKey(
  db: Db | Tx,
  name: string,
  keyName: string,
): Promise<{ account: AccountRow; key: string }> {
  return inTransaction(db, async (trx) => {
    const account = await insertAccount(trx, name);
    const k = await insertApiKey(trx, account.id, keyName);
    return { account, key: k.key };
  });
}

const KEY_WITH_ACCOUNT =
  'select "api_keys"."id" as "api_key_id", "api_keys"."key_hash" as "api_key_hash", ' +
  '"api_keys"."is_active" as "api_key_active", "accounts".* from "api_keys" ' +
  'inner join "accounts" on "accounts"."id" = "api_keys"."account_id" where "api_keys"."key_hash" = ? limit 1';
