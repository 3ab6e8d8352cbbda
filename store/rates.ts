import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';

export type RateKind = 'outbound' | 'inbound' | 'internal' | 'tts' | 'did_setup';
export const RATE_KINDS: readonly RateKind[] = ['outbound', 'inbound', 'internal', 'tts', 'did_setup'];

export interface RateRow {
  id: string;
  kind: RateKind;
  prefix: string;
  tier: string;
  amount_cents: number;
  created_at: string;
}

const normalise = (r: any): RateRow => ({ ...r, amount_cents: Number(r.amount_cents) });

/** Sets (inserts or replaces) one rate. */
export async function setRate(db: Db, kind: RateKind, amountCents: number, prefix = '', tier = ''): Promise<RateRow> {
  await db.transaction(async (trx) => {
    await trx('rates').where({ kind, prefix, tier }).delete();
    await trx('rates').insert({ id: newId(), kind, prefix, tier, amount_cents: amountCents, created_at: nowIso() });
  });
  return normalise(await db('rates').where({ kind, prefix, tier }).first());
}

export async function listRates(db: Db): Promise<RateRow[]> {
  return (await db('rates').orderBy(['kind', 'prefix', 'tier'])).map(normalise);
}

export async function ratesOfKind(db: Db, kind: RateKind): Promise<RateRow[]> {
  return (await db('rates').where({ kind })).map(normalise);
}
