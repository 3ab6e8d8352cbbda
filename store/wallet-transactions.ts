import type { Db, Tx } from './db.js';
import { insertRows, selectRows } from './fixed-sql.js';

export interface WalletTransactionRow {
  id: string;
  account_id: string;
  direction: 'credit' | 'debit';
  kind: 'topup' | 'did_setup' | 'call' | 'tts' | 'adjustment';
  amount_cents: number;
  balance_before_cents: number;
  call_id: string | null;
  settlement_key: string | null;
  created_at: string;
  seq: number;
  /** Why an operator moved the money (a console or CLI top-up); absent on the switch's own postings. */
  reason?: string | null;
}

const normalise = (r: any): WalletTransactionRow => ({
  ...r,
  amount_cents: Number(r.amount_cents),
  balance_before_cents: Number(r.balance_before_cents),
  seq: Number(r.seq),
});

/** The account's ledger, newest first (by the per-account sequence, which is the posting order). */
export async function listWalletTransactions(
  db: Db,
  accountId: string,
  limit: number,
  offset: number,
): Promise<WalletTransactionRow[]> {
  const rows = await db('wallet_transactions')
    .where({ account_id: accountId })
    .orderBy('seq', 'desc')
    .limit(limit)
    .offset(offset);
  return rows.map(normalise);
}

/** The row posted under an exactly-once settlement key, if any. */
export async function findLedgerRowBySettlementKey(db: Db, key: string): Promise<WalletTransactionRow | undefined> {
  const row = await db('wallet_transactions').where({ settlement_key: key }).first();
  return row ? normalise(row) : undefined;
}

/** The rows posted under any of these settlement keys (a call's talk and speech charges). */
export async function ledgerRowsBySettlementKeys(db: Db, keys: string[]): Promise<WalletTransactionRow[]> {
  if (keys.length === 0) return [];
  const sql = `select * from "wallet_transactions" where "settlement_key" in (${keys.map(() => '?').join(', ')})`;
  return (await selectRows(db, sql, keys)).map(normalise);
}

/** The account's last ledger position (0 before its first row); the next row takes this + 1. */
export async function lastLedgerSeq(db: Db, accountId: string): Promise<number> {
  const [last] = await selectRows(db, 'select max("seq") as "seq" from "wallet_transactions" where "account_id" = ?', [
    accountId,
  ]);
  return Number(last?.seq ?? 0);
}

/**
 * Appends a ledger row. A unique violation (the account's seq, or the settlement key, taken by a concurrent writer)
 * is thrown as is: the caller (billing/ledger) retries.
 */
export async function insertLedgerRow(tx: Tx, row: WalletTransactionRow): Promise<void> {
  await insertRows(tx, 'wallet_transactions', [row as unknown as Record<string, unknown>]);
}
