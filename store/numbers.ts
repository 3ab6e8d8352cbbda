import type { Db, Tx } from './db.js';
import { newId, nowIso } from './ids.js';
import { isUniqueViolation } from './errors.js';
import { insertRows, runSqlCount, selectRows } from './fixed-sql.js';
import { cachedRead } from './read-cache.js';

export interface NumberRow {
  id: string;
  number: string;
  account_id: string | null;
  friendly_name: string;
  is_active: boolean;
  webhook_voice_inbound: string;
  webhook_voice_outbound: string;
  webhook_status: string;
  acquired_at: string | null;
  created_at: string;
}

export const normaliseNumber = (r: any): NumberRow => ({ ...r, is_active: Boolean(r.is_active) });

export const E164 = /^\+[1-9]\d{6,14}$/;

const one = async (db: Db | Tx, where: string, params: unknown[]): Promise<NumberRow | undefined> => {
  const [r] = await selectRows(db, `select * from "numbers" where ${where} limit 1`, params);
  return r ? normaliseNumber(r) : undefined;
};

/** Adds numbers to the pool; returns how many were new (existing ones are left as they are). */
export async function addPoolNumbers(db: Db | Tx, numbers: string[]): Promise<number> {
  let added = 0;
  for (const number of numbers) {
    try {
      await insertRows(db, 'numbers', [{ id: newId(), number, is_active: false, created_at: nowIso() }]);
      added++;
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
    }
  }
  return added;
}

export async function listPool(db: Db | Tx): Promise<NumberRow[]> {
  const rows = await selectRows(db, 'select * from "numbers" where "account_id" is null order by "number" asc', []);
  return rows.map(normaliseNumber);
}

export async function listOwnedNumbers(db: Db | Tx, accountId: string): Promise<NumberRow[]> {
  const rows = await selectRows(db, 'select * from "numbers" where "account_id" = ? order by "number" asc', [
    accountId,
  ]);
  return rows.map(normaliseNumber);
}

export async function findNumberByE164(db: Db | Tx, number: string): Promise<NumberRow | undefined> {
  return one(db, '"number" = ?', [number]);
}

/** The number if it is an active number of the account (one it may present as caller ID), else undefined. */
export async function findActiveNumberOf(
  db: Db | Tx,
  accountId: string,
  number: string,
): Promise<NumberRow | undefined> {
  const n = await findNumberByE164(db, number);
  return n && n.account_id === accountId && n.is_active ? n : undefined;
}

/** The account's number by id; undefined when the account does not own it. */
export async function findNumberOf(db: Db | Tx, accountId: string, id: string): Promise<NumberRow | undefined> {
  return one(db, '"id" = ? and "account_id" = ?', [id, accountId]);
}

/** Any account's number by id (or a pool number). */
export async function findNumberAnyAccount(db: Db | Tx, id: string): Promise<NumberRow | undefined> {
  return one(db, '"id" = ?', [id]);
}

/** Reads a number and locks its row for the rest of the transaction (FOR UPDATE on PostgreSQL). */
export async function lockNumber(tx: Tx, id: string): Promise<NumberRow | undefined> {
  const lock = tx.dialect === 'pg' ? ' for update' : '';
  const [r] = await selectRows(tx, `select * from "numbers" where "id" = ? limit 1${lock}`, [id]);
  return r ? normaliseNumber(r) : undefined;
}

/** Gives a pool number to an account, only while it has no owner (a compare-and-set): true when this one won. */
export async function takePoolNumber(db: Db | Tx, id: string, accountId: string, at: string): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "numbers" set "account_id" = ?, "is_active" = ?, "acquired_at" = ? where "id" = ? and "account_id" is null',
    [accountId, true, at, id],
    'numbers',
  );
  return n === 1;
}

/** Returns an owned number to the pool, clearing everything the account set on it; false when not the account's. */
export async function returnNumberToPool(db: Db | Tx, accountId: string, id: string): Promise<boolean> {
  const n = await runSqlCount(
    db,
    'update "numbers" set "account_id" = ?, "is_active" = ?, "acquired_at" = ?, "friendly_name" = ?, ' +
      '"webhook_voice_inbound" = ?, "webhook_voice_outbound" = ?, "webhook_status" = ? ' +
      'where "id" = ? and "account_id" = ?',
    [null, false, null, '', '', '', '', id, accountId],
    'numbers',
  );
  return n > 0;
}

export type NumberPatch = Partial<
  Pick<NumberRow, 'friendly_name' | 'webhook_voice_inbound' | 'webhook_voice_outbound' | 'webhook_status'>
>;

/** Sets fields of the account's number (none: only checks it exists); the row after, or undefined when not found. */
export async function configureNumber(
  db: Db | Tx,
  accountId: string,
  id: string,
  patch: NumberPatch,
): Promise<NumberRow | undefined> {
  const cols = Object.keys(patch).filter((c) => patch[c as keyof NumberPatch] !== undefined);
  if (cols.length > 0) {
    const found = await runSqlCount(
      db,
      `update "numbers" set ${cols.map((c) => `"${c}" = ?`).join(', ')} where "id" = ? and "account_id" = ?`,
      [...cols.map((c) => patch[c as keyof NumberPatch]), id, accountId],
      { table: 'numbers', columns: cols },
    );
    if (!found) return undefined;
  }
  return findNumberOf(db, accountId, id);
}

/**
 * findNumberByE164 through the per-process read cache (store/read-cache.ts): every inbound call looks its DID up.
 * A number acquired, configured or released in this process applies at once; by another process within two seconds.
 */
export async function findNumberByE164Cached(db: Db, number: string): Promise<NumberRow | undefined> {
  return cachedRead(db, 'numbers', `e164:${number}`, () => findNumberByE164(db, number));
}

/** findNumberOf through the per-process read cache (store/read-cache.ts): the call path's status-URL lookup. */
export async function findNumberOfCached(db: Db, accountId: string, id: string): Promise<NumberRow | undefined> {
  return cachedRead(db, 'numbers', `${accountId}:${id}`, () => findNumberOf(db, accountId, id));
}
