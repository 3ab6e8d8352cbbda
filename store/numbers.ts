import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { isUniqueViolation } from './errors.js';

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
