import type { Db, Tx } from './db.js';
import { firstRow, insertRows, runSqlCount, selectRows } from './fixed-sql.js';
import { nowIso } from './ids.js';

/** A mobile-money provider the operator trusts, with the secret its callbacks are signed with. */
export interface TopupProviderRow {
  name: string;
  secret: string;
  created_at: string;
  updated_at: string;
}

export type TopupKind = 'payment' | 'reversal';

/** One accepted top-up callback and the ledger row it posted (migration 023). */
export interface WalletTopupRow {
  id: string;
  provider: string;
  receipt: string;
  kind: TopupKind;
  /** A reversal's own id at the provider (its `receipt` is the payment's); null for a payment. */
  reference: string | null;
  account_id: string;
  amount_cents: number;
  posted_cents: number;
  currency: string;
  msisdn: string;
  paid_at: string;
  received_at: string;
  ledger_id: string;
}

const topup = (r: any): WalletTopupRow => ({
  ...r,
  amount_cents: Number(r.amount_cents),
  posted_cents: Number(r.posted_cents),
});

/** Adds a provider or replaces its secret (the old one stops verifying at once). */
export async function setTopupProvider(db: Db, name: string, secret: string): Promise<TopupProviderRow> {
  const now = nowIso();
  const updated = await runSqlCount(
    db,
    'update "topup_providers" set "secret" = ?, "updated_at" = ? where "name" = ?',
    [secret, now, name],
    { table: 'topup_providers', columns: ['secret', 'updated_at'] },
  );
  if (!updated) await insertRows(db, 'topup_providers', [{ name, secret, created_at: now, updated_at: now }]);
  return (await getTopupProvider(db, name))!;
}

export async function getTopupProvider(db: Db, name: string): Promise<TopupProviderRow | undefined> {
  return (await firstRow(db, 'select * from "topup_providers" where "name" = ? limit 1', [name])) as
    TopupProviderRow | undefined;
}

export async function listTopupProviders(db: Db): Promise<TopupProviderRow[]> {
  return (await selectRows(
    db,
    'select * from "topup_providers" order by "name" asc',
    [],
  )) as unknown as TopupProviderRow[];
}

export async function removeTopupProvider(db: Db, name: string): Promise<boolean> {
  return (await runSqlCount(db, 'delete from "topup_providers" where "name" = ?', [name], 'topup_providers')) > 0;
}

export async function findWalletTopup(
  db: Db | Tx,
  provider: string,
  receipt: string,
  kind: TopupKind,
): Promise<WalletTopupRow | undefined> {
  const [row] = await selectRows(
    db,
    'select * from "wallet_topups" where "provider" = ? and "receipt" = ? and "kind" = ? limit 1',
    [provider, receipt, kind],
  );
  return row ? topup(row) : undefined;
}

/** Records an accepted callback; a unique violation (the same receipt and kind, raced) is thrown as is. */
export async function insertWalletTopup(tx: Tx, row: WalletTopupRow): Promise<void> {
  await insertRows(tx, 'wallet_topups', [row as unknown as Record<string, unknown>]);
}

/** The provider's side of the ledger rows posted for top-up callbacks, by ledger id (rows of others are absent). */
export async function topupsByLedgerIds(
  db: Db,
  ledgerIds: readonly string[],
): Promise<Map<string, Pick<WalletTopupRow, 'provider' | 'receipt' | 'kind' | 'reference'>>> {
  if (ledgerIds.length === 0) return new Map();
  const out = new Map<string, Pick<WalletTopupRow, 'provider' | 'receipt' | 'kind' | 'reference'>>();
  for (let i = 0; i < ledgerIds.length; i += 500) {
    const ids = ledgerIds.slice(i, i + 500);
    const rows = await selectRows(
      db,
      'select "ledger_id", "provider", "receipt", "kind", "reference" from "wallet_topups" ' +
        `where "ledger_id" in (${ids.map(() => '?').join(', ')})`,
      ids,
    );
    for (const r of rows) out.set(r.ledger_id as string, r as any);
  }
  return out;
}

/** Top-ups received in [from, to), oldest first. */
export async function walletTopupsBetween(db: Db, from: string, to: string): Promise<WalletTopupRow[]> {
  const rows = await selectRows(
    db,
    'select * from "wallet_topups" where "received_at" >= ? and "received_at" < ? order by "received_at" asc',
    [from, to],
  );
  return rows.map(topup);
}

/**
 * Ledger rows posted for top-up callbacks (their settlement key starts with `prefix`, which holds no LIKE wildcard)
 * in [from, to).
 */
export async function ledgerRowsWithKeyPrefix(
  db: Db,
  prefix: string,
  from: string,
  to: string,
): Promise<Array<{ id: string; account_id: string; direction: string; amount_cents: number; settlement_key: string }>> {
  if (/[%_\\]/.test(prefix)) throw new Error('a settlement key prefix holds no LIKE wildcard');
  const rows = await selectRows(
    db,
    'select "id", "account_id", "direction", "amount_cents", "settlement_key" from "wallet_transactions" ' +
      'where "settlement_key" like ? and "created_at" >= ? and "created_at" < ?',
    [`${prefix}%`, from, to],
  );
  return rows.map((r: any) => ({ ...r, amount_cents: Number(r.amount_cents) }));
}
