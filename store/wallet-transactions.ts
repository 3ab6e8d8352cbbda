import type { Db } from './db.js';

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
