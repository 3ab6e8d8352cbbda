import { driverOf, type Db } from './db.js';
import { PgDriver, type PgStatement } from './driver/pg.js';
import { cappedPgPost, type CappedDebit } from './wallet-transactions.js';

export interface PgSettlement {
  /** Whether the call's live credit row was there to delete (it is written at answer, deleted by a settlement). */
  hadCredit: boolean;
  /** Per debit: what was posted, or undefined when its key was taken (or the account is gone). */
  posted: ({ amountCents: number; balanceBeforeCents: number } | undefined)[];
}

/**
 * Settles a call's capped debits on PostgreSQL in one transaction sent at once (store/driver/pg.ts pipelined): one
 * statement deletes the call's live credit row and locks the account, then one per debit posts it unless its key is
 * taken. The account row is locked only while PostgreSQL runs the posts and the COMMIT, not across round trips to
 * the switch, which every other settlement of the account waited out. Same rows, same chain as billing's
 * postInTransaction with capAtBalance; the keys are not read here (the posts skip a taken key; billing reads them
 * when an earlier settlement may exist). A unique violation (a concurrent writer took the position or the key) is
 * thrown as is, and the whole transaction is rolled back.
 */
export async function settleCappedDebitsOnPg(
  db: Db,
  accountId: string,
  callId: string,
  debits: readonly CappedDebit[],
): Promise<PgSettlement> {
  const statements: PgStatement[] = [
    debits.length > 0
      ? { sql: DELETE_CREDIT_AND_LOCK, bindings: [callId, accountId], writes: 'call_credit' }
      : { sql: DELETE_CREDIT, bindings: [callId], writes: 'call_credit' },
  ];
  for (const d of debits) statements.push(cappedPgPost(d));
  const driver = driverOf(db);
  if (!(driver instanceof PgDriver)) throw new Error('store: settleCappedDebitsOnPg needs a PostgreSQL store');
  const results = await driver.pipelined(statements);
  return {
    hadCredit: Number(results[0]![0]?.gone ?? 0) > 0,
    posted: results.slice(1).map((r) => {
      const row = r[0];
      if (!row) return undefined;
      return { amountCents: Number(row.amount_cents), balanceBeforeCents: Number(row.balance_before_cents) };
    }),
  };
}

const GONE = 'with "gone" as (delete from "call_credit" where "call_id" = ? returning 1) ';
const DELETE_CREDIT = `${GONE}select count(*) as "gone" from "gone"`;
/** No account row, no row: the posts then post nothing and billing finds no earlier settlement either. */
const DELETE_CREDIT_AND_LOCK =
  `${GONE}select (select count(*) from "gone") as "gone", "balance_cents" from "accounts" where "id" = ? ` +
  'for no key update of "accounts"';
