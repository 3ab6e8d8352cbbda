import type { Db } from './db.js';
import { newId, nowIso } from './ids.js';
import { cachedRead } from './read-cache.js';

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

/**
 * ratesOfKind through the per-process read cache (store/read-cache.ts): admission prices every placed call's first
 * minute. A rate set in this process applies at once; one set by another process (the CLI) within two seconds.
 */
export async function ratesOfKindCached(db: Db, kind: RateKind): Promise<RateRow[]> {
  return cachedRead(db, 'rates', kind, () => ratesOfKind(db, kind));
}
