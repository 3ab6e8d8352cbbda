import { inTransaction, type Db, type Tx } from './db.js';
import { insertRows, runSql, selectRows } from './fixed-sql.js';
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
export async function setRate(
  db: Db | Tx,
  kind: RateKind,
  amountCents: number,
  prefix = '',
  tier = '',
): Promise<RateRow> {
  const row = { id: newId(), kind, prefix, tier, amount_cents: amountCents, created_at: nowIso() };
  await inTransaction(db, async (tx) => {
    await runSql(
      tx,
      'delete from "rates" where "kind" = ? and "prefix" = ? and "tier" = ?',
      [kind, prefix, tier],
      'rates',
    );
    await insertRows(tx, 'rates', [row]);
  });
  return normalise(row);
}

export async function listRates(db: Db | Tx): Promise<RateRow[]> {
  return (await selectRows(db, 'select * from "rates" order by "kind" asc, "prefix" asc, "tier" asc', [])).map(
    normalise,
  );
}

export async function ratesOfKind(db: Db | Tx, kind: RateKind): Promise<RateRow[]> {
  return (await selectRows(db, 'select * from "rates" where "kind" = ?', [kind])).map(normalise);
}

/**
 * ratesOfKind through the per-process read cache (store/read-cache.ts): admission prices every placed call's first
 * minute. A rate set in this process applies at once; one set by another process (the CLI) within two seconds.
 */
export async function ratesOfKindCached(db: Db, kind: RateKind): Promise<RateRow[]> {
  return cachedRead(db, 'rates', kind, () => ratesOfKind(db, kind));
}
