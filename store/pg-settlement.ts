import { driverOf, type Db } from './db.js';
import { PgDriver, type PgStatement } from './driver/pg.js';
import { normaliseLedgerRow, type WalletTransactionRow } from './wallet-transactions.js';

/** A debit a settlement posts under its settlement key, capped at the balance. */
export interface CappedDebit {
  row: Omit<WalletTransactionRow, 'seq' | 'amount_cents' | 'balance_before_cents' | 'direction'>;
  /** The amount rated, > 0; the row takes the least of it and the balance. */
  cents: number;
}

export interface PgSettlement {
  /** Rows already posted under the settlement keys when the transaction began. */
  prior: WalletTransactionRow[];
  /** Per debit: what was posted, or undefined when its key was taken meanwhile (the caller settles again). */
  posted: ({ amountCents: number; balanceBeforeCents: number } | undefined)[];
}

const texts = new Map<string, string>();

/**
 * The post of one capped debit as one statement: the row at the account's next position, amount the least of the
 * rated cents and the balance, skipped when its settlement key is taken; the balance moved by what was posted. It
 * runs after the statement that locks the account row, so its snapshot holds every post committed before the lock.
 */
function postText(cols: readonly string[]): string {
  const key = cols.join(',');
  let sql = texts.get(key);
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
    if (texts.size < 100) texts.set(key, sql);
  }
  return sql;
}

/**
 * Settles a call's capped debits on PostgreSQL in one transaction sent at once (store/driver/pg.ts pipelined): the rows
 * under `keys`, the call's live credit row deleted, the account locked, each debit posted unless its key is taken. The
 * account row is locked only while PostgreSQL runs the posts and the COMMIT, not across round trips to the switch
 * (three of them, and the event loop's turns between, with a transaction per statement), which every other settlement
 * of the account waited out. Same rows, same chain as billing's postInTransaction with capAtBalance; a unique violation
 * (a concurrent writer took the position or the key) is thrown as is, and the whole transaction is rolled back.
 */
export async function settleCappedDebitsOnPg(
  db: Db,
  accountId: string,
  callId: string,
  keys: readonly string[],
  debits: readonly CappedDebit[],
): Promise<PgSettlement> {
  const statements: PgStatement[] = [
    {
      sql: `select * from "wallet_transactions" where "settlement_key" in (${keys.map(() => '?').join(', ')})`,
      bindings: [...keys],
    },
    { sql: 'delete from "call_credit" where "call_id" = ?', bindings: [callId], writes: 'call_credit' },
  ];
  if (debits.length > 0)
    statements.push({
      sql: 'select "balance_cents" from "accounts" where "id" = ? for no key update',
      bindings: [accountId],
    });
  for (const d of debits) {
    const cols = Object.keys(d.row);
    const values = cols.map((c) => (d.row as Record<string, unknown>)[c] ?? null);
    statements.push({
      sql: postText(cols),
      bindings: [accountId, ...values, d.cents, accountId, d.row.settlement_key, accountId],
      writes: [{ table: 'wallet_transactions' }, { table: 'accounts', columns: ['balance_cents'] }],
    });
  }
  const driver = driverOf(db);
  if (!(driver instanceof PgDriver)) throw new Error('store: settleCappedDebitsOnPg needs a PostgreSQL store');
  const results = await driver.pipelined(statements);
  const posts = results.slice(debits.length > 0 ? 3 : 2);
  return {
    prior: results[0]!.map(normaliseLedgerRow),
    posted: posts.map((r) => {
      const row = r[0];
      if (!row) return undefined;
      return { amountCents: Number(row.amount_cents), balanceBeforeCents: Number(row.balance_before_cents) };
    }),
  };
}
