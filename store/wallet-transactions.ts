import { isPostgres, type Db, type Tx } from './db.js';
import type { Writes } from './driver/types.js';
import { insertRows, runSql, selectRows } from './fixed-sql.js';

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

/** A ledger row as read from either store (PostgreSQL's bigints come back as strings). */
export const normaliseLedgerRow = (r: any): WalletTransactionRow => ({
  ...r,
  amount_cents: Number(r.amount_cents),
  balance_before_cents: Number(r.balance_before_cents),
  seq: Number(r.seq),
});

/** The account's ledger, newest first (by the per-account sequence, which is the posting order). */
export async function listWalletTransactions(
  db: Db | Tx,
  accountId: string,
  limit: number,
  offset: number,
): Promise<WalletTransactionRow[]> {
  const rows = await selectRows(
    db,
    'select * from "wallet_transactions" where "account_id" = ? order by "seq" desc limit ? offset ?',
    [accountId, limit, offset],
  );
  return rows.map(normaliseLedgerRow);
}

/** The row posted under an exactly-once settlement key, if any. */
export async function findLedgerRowBySettlementKey(
  db: Db | Tx,
  key: string,
): Promise<WalletTransactionRow | undefined> {
  const [row] = await selectRows(db, 'select * from "wallet_transactions" where "settlement_key" = ? limit 1', [key]);
  return row ? normaliseLedgerRow(row) : undefined;
}

/** The rows posted under any of these settlement keys (a call's talk and speech charges). */
export async function ledgerRowsBySettlementKeys(db: Db | Tx, keys: string[]): Promise<WalletTransactionRow[]> {
  if (keys.length === 0) return [];
  const sql = `select * from "wallet_transactions" where "settlement_key" in (${keys.map(() => '?').join(', ')})`;
  return (await selectRows(db, sql, keys)).map(normaliseLedgerRow);
}

/** The account's last ledger position (0 before its first row); the next row takes this + 1. */
export async function lastLedgerSeq(db: Db | Tx, accountId: string): Promise<number> {
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

/** The statement text of appendLedgerRow, per dialect and column list. */
const appendTexts = new Map<string, string>();

/**
 * Appends a ledger row at the account's next position (its last seq + 1, read by the insert itself) and sets the
 * account's balance, in the caller's transaction, which holds the account's lock (lockAccountBalance): the lock is
 * taken before this statement starts, so its read of the last position sees every post committed before. On
 * PostgreSQL one statement does both (a round trip less while the account is locked, and every other post of a
 * busy account waits for that lock); on SQLite two. A unique violation is thrown as is (billing/ledger retries).
 */
export async function appendLedgerRow(
  tx: Tx,
  row: Omit<WalletTransactionRow, 'seq'>,
  balanceAfterCents: number,
): Promise<void> {
  const cols = Object.keys(row);
  const pg = isPostgres(tx);
  const key = `${pg}\n${cols.join(',')}`;
  let sql = appendTexts.get(key);
  if (sql === undefined) {
    const insert =
      `insert into "wallet_transactions" (${[...cols, 'seq'].map((c) => `"${c}"`).join(', ')}) values ` +
      `(${cols.map(() => '?').join(', ')}, ` +
      '(select coalesce(max("seq"), 0) + 1 from "wallet_transactions" where "account_id" = ?))';
    sql = pg ? `with "posted" as (${insert} returning "seq") ${SET_BALANCE}` : insert;
    if (appendTexts.size < 100) appendTexts.set(key, sql);
  }
  const values = cols.map((c) => (row as unknown as Record<string, unknown>)[c] ?? null);
  if (pg) return runSql(tx, sql, [...values, row.account_id, balanceAfterCents, row.account_id], POSTED);
  await runSql(tx, sql, [...values, row.account_id], 'wallet_transactions');
  await runSql(tx, SET_BALANCE, [balanceAfterCents, row.account_id], BALANCE);
}

const BALANCE = { table: 'accounts', columns: ['balance_cents'] };
const POSTED: Writes = [{ table: 'wallet_transactions' }, BALANCE];

const SET_BALANCE = 'update "accounts" set "balance_cents" = ? where "id" = ?';
