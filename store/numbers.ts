import type { Db, Tx } from './db.js';
import { newId, nowIso } from './ids.js';
import { isUniqueViolation } from './errors.js';
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

/** Adds numbers to the pool; returns how many were new (existing ones are left as they are). */
export async function addPoolNumbers(db: Db, numbers: string[]): Promise<number> {
  let added = 0;
  for (const number of numbers) {
    try {
      await db('numbers').insert({ id: newId(), number, is_active: false, created_at: nowIso() });
      added++;
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
    }
  }
  return added;
}

export async function listPool(db: Db): Promise<NumberRow[]> {
  return (await db('numbers').whereNull('account_id').orderBy('number')).map(normaliseNumber);
}

export async function listOwnedNumbers(db: Db, accountId: string): Promise<NumberRow[]> {
  return (await db('numbers').where({ account_id: accountId }).orderBy('number')).map(normaliseNumber);
}

export async function findNumberByE164(db: Db, number: string): Promise<NumberRow | undefined> {
  const r = await db('numbers').where({ number }).first();
  return r ? normaliseNumber(r) : undefined;
}

/** The number if it is an active number of the account (one it may present as caller ID), else undefined. */
export async function findActiveNumberOf(db: Db, accountId: string, number: string): Promise<NumberRow | undefined> {
  const n = await findNumberByE164(db, number);
  return n && n.account_id === accountId && n.is_active ? n : undefined;
}

/** The account's number by id; undefined when the account does not own it. */
export async function findNumberOf(db: Db, accountId: string, id: string): Promise<NumberRow | undefined> {
  const r = await db('numbers').where({ id, account_id: accountId }).first();
  return r ? normaliseNumber(r) : undefined;
}

/** Any account's number by id (or a pool number). */
export async function findNumberAnyAccount(db: Db, id: string): Promise<NumberRow | undefined> {
  const r = await db('numbers').where({ id }).first();
  return r ? normaliseNumber(r) : undefined;
}

/** Reads a number and locks its row for the rest of the transaction (FOR UPDATE on PostgreSQL). */
export async function lockNumber(tx: Tx, id: string): Promise<NumberRow | undefined> {
  const r = await tx('numbers').where({ id }).forUpdate().first();
  return r ? normaliseNumber(r) : undefined;
}

/** Gives a pool number to an account, only while it has no owner (a compare-and-set): true when this one won. */
export async function takePoolNumber(db: Db, id: string, accountId: string, at: string): Promise<boolean> {
  const n = await db('numbers')
    .where({ id })
    .whereNull('account_id')
    .update({ account_id: accountId, is_active: true, acquired_at: at });
  return n === 1;
}

/** Returns an owned number to the pool, clearing everything the account set on it; false when not the account's. */
export async function returnNumberToPool(db: Db, accountId: string, id: string): Promise<boolean> {
  const n = await db('numbers').where({ id, account_id: accountId }).update({
    account_id: null,
    is_active: false,
    acquired_at: null,
    friendly_name: '',
    webhook_voice_inbound: '',
    webhook_voice_outbound: '',
    webhook_status: '',
  });
  return n > 0;
}

export type NumberPatch = Partial<
  Pick<NumberRow, 'friendly_name' | 'webhook_voice_inbound' | 'webhook_voice_outbound' | 'webhook_status'>
>;

/** Sets fields of the account's number (none: only checks it exists); the row after, or undefined when not found. */
export async function configureNumber(
  db: Db,
  accountId: string,
  id: string,
  patch: NumberPatch,
): Promise<NumberRow | undefined> {
  const q = db('numbers').where({ id, account_id: accountId });
  const found = Object.keys(patch).length ? await q.update(patch) : (await q.first('id')) ? 1 : 0;
  if (!found) return undefined;
  const row = await db('numbers').where({ id, account_id: accountId }).first();
  return row ? normaliseNumber(row) : undefined;
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
