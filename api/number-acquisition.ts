import { InsufficientFundsError, LedgerConflictError, formatMoney, postInTransaction } from '../billing/index.js';
import { ReasonCodes } from '../events/index.js';
import {
  findNumberAnyAccount,
  inTransaction,
  lockNumber,
  nowIso,
  ratesOfKind,
  returnNumberToPool,
  takePoolNumber,
  type Db,
  type NumberRow,
  type Tx,
} from '../store/index.js';
import { ApiError, notFound } from './errors.js';

/**
 * Setup fee of a number: the `did_setup` rate with the longest prefix matching the number (prefix '' matches
 * all). With no did_setup rate set the fee is 0.00 and no ledger row is written (docs/api.md).
 */
export async function didSetupFeeCents(db: Db | Tx, number: string): Promise<number> {
  const digits = number.replace(/^\+/, '');
  let best: { len: number; cents: number } | undefined;
  for (const r of await ratesOfKind(db, 'did_setup')) {
    const p = r.prefix.replace(/^\+/, '');
    if (digits.startsWith(p) && (!best || p.length > best.len)) best = { len: p.length, cents: r.amount_cents };
  }
  return best?.cents ?? 0;
}

/**
 * Takes a pool number for the account and charges its setup fee in one transaction. The number row is locked
 * first and taken with a conditional update (only while it has no owner), the ledger post locks the account
 * row: under any concurrency a number is owned once, the balance never goes negative and `balance_before`
 * chains (billing/ledger.ts).
 */
export async function acquireNumber(db: Db, accountId: string, numberId: string): Promise<NumberRow> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await inTransaction(db, async (trx) => {
        const n = await lockNumber(trx, numberId);
        if (!n) throw notFound('Number', 'NUMBER_NOT_FOUND');
        if (n.account_id) throw new ApiError(409, 'NUMBER_TAKEN', 'The number is already taken.');
        const fee = await didSetupFeeCents(trx, n.number);
        if (fee > 0) {
          try {
            await postInTransaction(trx, { accountId, direction: 'debit', kind: 'did_setup', amountCents: fee });
          } catch (e) {
            if (e instanceof InsufficientFundsError)
              throw new ApiError(
                402,
                ReasonCodes.insufficientBalance,
                `The wallet balance (${formatMoney(e.balanceCents)} KES) does not cover the setup fee (${formatMoney(fee)} KES).`,
              );
            throw e;
          }
        }
        const now = nowIso();
        const taken = await takePoolNumber(trx, numberId, accountId, now);
        if (!taken) throw new ApiError(409, 'NUMBER_TAKEN', 'The number is already taken.');
        return (await findNumberAnyAccount(trx, numberId))!;
      });
    } catch (e) {
      if (e instanceof LedgerConflictError && attempt < 5) continue;
      throw e;
    }
  }
}

/** Returns an owned number to the pool, clearing everything the account set on it. */
export async function releaseNumber(db: Db, accountId: string, numberId: string): Promise<boolean> {
  return returnNumberToPool(db, accountId, numberId);
}
