import { isPostgres, sqlOf, type Db, type Tx } from './db.js';
import type { Writes } from './driver/types.js';
import { insertRows, runSql, selectRows } from './fixed-sql.js';
import { lockAccountBalance } from './accounts.js';

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

/** A debit a settlement posts under its settlement key, capped at the balance. */
export interface CappedDebit {
  row: Omit<WalletTransactionRow, 'seq' | 'amount_cents' | 'balance_before_cents' | 'direction'>;
  /** The amount rated, > 0; the row takes the least of it and the balance. */
  cents: number;
}

/** What a capped debit posted: the least of the rated cents and the balance, and the balance before it. */
export interface PostedDebit {
  amountCents: number;
  balanceBeforeCents: number;
}

const pgCappedTexts = new Map<string, string>();

/**
 * PostgreSQL: the post of one capped debit as one statement: the row at the account's next position, amount the least of the
 * rated cents and the balance, skipped when its settlement key is taken; the balance moved by what was posted. It
 * runs after the statement that locks the account row, so its snapshot holds every post committed before the lock.
 */
function cappedPgText(cols: readonly string[]): string {
  const key = cols.join(',');
  let sql = pgCappedTexts.get(key);
  if (sql === undefined) {
    const all = [...cols, 'direction', 'amount_cents', 'balance_before_cents', 'seq'];
    sql =
      'with "acct" as (select "balance_cents" as "before" from "accounts" where "id" = ?), ' +
      `"posted" as (insert into "wallet_transactions" (${all.map((c) => `"${c}"`).join(', ')}) ` +
      `select ${cols.map(() => '?').join(', ')}, 'debit', least(?, "acct"."before"), "acct"."before", ` +
      '(select coalesce(max("seq"), 0) + 1 from "wallet_transactions" where "account_id" = ?) from "acct" ' +
      'where not exists (select 1 from "wallet_transactions" where "settlement_key" = ?) ' +
      'returning "amount_cents", "balance_before_cents") ' +
      'update "accounts" set "balance_cents" = "posted"."balance_before_cents" - "posted"."amount_cents" ' +
      'from "posted" where "accounts"."id" = ? returning "posted"."amount_cents", "posted"."balance_before_cents"';
    if (pgCappedTexts.size < 100) pgCappedTexts.set(key, sql);
  }
  return sql;
}

/** PostgreSQL: the statement posting `d` (cappedPgText), its bindings in the text's order. */
export function cappedPgPost(d: CappedDebit): { sql: string; bindings: unknown[]; writes: Writes } {
  const cols = Object.keys(d.row);
  const values = cols.map((c) => (d.row as Record<string, unknown>)[c] ?? null);
  const accountId = d.row.account_id;
  return {
    sql: cappedPgText(cols),
    bindings: [accountId, ...values, d.cents, accountId, d.row.settlement_key, accountId],
    writes: POSTED,
  };
}

const cappedTexts = new Map<string, string>();

/**
 * SQLite: the row at the account's next position, its amount the least of the rated cents and the balance, read by
 * the insert itself; nothing when the settlement key is taken (its unique index). One row of values with scalar
 * subqueries, not an INSERT ... SELECT: reading the table it writes, that form makes SQLite stage the row in a
 * temporary table first. SQLite has one writer, so the balance and the position read here are the ones the balance
 * update that follows moves from.
 */
function cappedSqliteText(cols: readonly string[]): string {
  const key = cols.join(',');
  let sql = cappedTexts.get(key);
  if (sql === undefined) {
    const all = [...cols, 'direction', 'amount_cents', 'balance_before_cents', 'seq'];
    const balance = '(select "balance_cents" from "accounts" where "id" = ?)';
    sql =
      `insert into "wallet_transactions" (${all.map((c) => `"${c}"`).join(', ')}) ` +
      `values (${cols.map(() => '?').join(', ')}, 'debit', min(?, ${balance}), ${balance}, ` +
      '(select coalesce(max("seq"), 0) + 1 from "wallet_transactions" where "account_id" = ?)) ' +
      'on conflict ("settlement_key") do nothing returning "amount_cents", "balance_before_cents"';
    if (cappedTexts.size < 100) cappedTexts.set(key, sql);
  }
  return sql;
}

/**
 * Posts one capped debit under its settlement key in the caller's transaction, without reading the key or the
 * balance first: the insert skips a taken key and takes its amount and position from the account row itself, and
 * the balance is then set from what it posted (two statements on SQLite; on PostgreSQL the account row is locked
 * first, then one statement does both). Undefined when the key was taken or the account is missing: the caller reads
 * what the key holds. A unique violation (a concurrent writer took the key or the position) is thrown as is.
 */
export async function postCappedDebit(tx: Tx, d: CappedDebit): Promise<PostedDebit | undefined> {
  if (!Number.isInteger(d.cents) || d.cents <= 0) throw new Error('a capped debit is a positive integer of cents');
  const cols = Object.keys(d.row);
  const values = cols.map((c) => (d.row as Record<string, unknown>)[c] ?? null);
  const accountId = d.row.account_id;
  let row;
  if (isPostgres(tx)) {
    if ((await lockAccountBalance(tx, accountId)) === undefined) return undefined;
    const post = cappedPgPost(d);
    [row] = await sqlOf(tx).all(post.sql, post.bindings, post.writes);
  } else {
    try {
      [row] = await sqlOf(tx).all(
        cappedSqliteText(cols),
        [...values, d.cents, accountId, accountId, accountId],
        'wallet_transactions',
      );
    } catch (e) {
      // No such account: its balance, read by the insert, is null, which the amount's NOT NULL refuses.
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_NOTNULL') return undefined;
      throw e;
    }
    if (row) {
      const after = Number(row.balance_before_cents) - Number(row.amount_cents);
      await runSql(tx, SET_BALANCE, [after, accountId], BALANCE);
    }
  }
  if (!row) return undefined;
  return { amountCents: Number(row.amount_cents), balanceBeforeCents: Number(row.balance_before_cents) };
}
