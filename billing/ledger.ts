import {
  appendLedgerRow,
  findLedgerRowBySettlementKey,
  inTransaction,
  isUniqueViolation,
  lockAccountBalance,
  newId,
  nowIso,
  type Db,
  type Tx,
} from '../store/index.js';

export type LedgerDirection = 'credit' | 'debit';
/**
 * Documented `kind` values of wallet transactions:
 * - topup: the operator added money (credit);
 * - did_setup: one-time fee for acquiring a number (debit);
 * - call: connected time of a call, settled once per call (debit);
 * - tts: speech synthesised on a call, settled once per call (debit);
 * - adjustment: an operator correction (credit or debit).
 */
export type LedgerKind = 'topup' | 'did_setup' | 'call' | 'tts' | 'adjustment';

export class InsufficientFundsError extends Error {
  readonly code = 'WALLET_INSUFFICIENT';
  readonly status = 402;
  constructor(
    readonly balanceCents: number,
    readonly amountCents: number,
  ) {
    super('the wallet balance does not cover this charge');
    this.name = 'InsufficientFundsError';
  }
}

export interface PostInput {
  accountId: string;
  direction: LedgerDirection;
  kind: LedgerKind;
  amountCents: number;
  callId?: string | null;
  /** Exactly-once key: a second post with the same key is a no-op returning `duplicate: true`. */
  settlementKey?: string | null;
  /** For debits: allow a partial debit down to zero instead of refusing (settling talk time already consumed). */
  capAtBalance?: boolean;
  /** Why an operator moved the money (kept in the ledger row). */
  reason?: string;
}

export interface PostResult {
  id: string | null;
  balanceBeforeCents: number;
  balanceAfterCents: number;
  amountCents: number;
  duplicate: boolean;
}

/**
 * Posts one ledger row and moves the balance, inside the caller's transaction. The account row is locked first
 * (FOR NO KEY UPDATE on PostgreSQL; SQLite has one writer), so concurrent posts serialise and `balance_before` chains.
 * The balance never goes below zero.
 */
export async function postInTransaction(
  trx: Tx,
  input: PostInput,
  opts: {
    /** The caller looked the settlement key up in this transaction and found it free. */ keyChecked?: boolean;
  } = {},
): Promise<PostResult> {
  if (!Number.isInteger(input.amountCents) || input.amountCents < 0)
    throw new Error('amountCents must be a non-negative integer');
  if (input.settlementKey && !opts.keyChecked) {
    const prior = await findLedgerRowBySettlementKey(trx, input.settlementKey);
    if (prior) {
      const before = prior.balance_before_cents;
      const amt = prior.amount_cents;
      return {
        id: prior.id,
        balanceBeforeCents: before,
        balanceAfterCents: prior.direction === 'credit' ? before + amt : before - amt,
        amountCents: amt,
        duplicate: true,
      };
    }
  }
  const before = await lockAccountBalance(trx, input.accountId);
  if (before === undefined) throw new Error(`account ${input.accountId} not found`);
  let amount = input.amountCents;
  if (input.direction === 'debit' && amount > before) {
    if (!input.capAtBalance) throw new InsufficientFundsError(before, amount);
    amount = before;
  }
  const after = input.direction === 'credit' ? before + amount : before - amount;
  const id = newId();
  try {
    // The row at the account's next position and the new balance (one statement on PostgreSQL: the account stays
    // locked for as few round trips as possible).
    await appendLedgerRow(
      trx,
      {
        id,
        account_id: input.accountId,
        direction: input.direction,
        kind: input.kind,
        amount_cents: amount,
        balance_before_cents: before,
        call_id: input.callId ?? null,
        settlement_key: input.settlementKey ?? null,
        created_at: nowIso(),
        ...(input.reason && { reason: input.reason }),
      },
      after,
    );
  } catch (e) {
    if (isUniqueViolation(e)) throw new LedgerConflictError();
    throw e;
  }
  return { id, balanceBeforeCents: before, balanceAfterCents: after, amountCents: amount, duplicate: false };
}

/** Two writers raced for the same ledger position or settlement key; the caller retries. */
export class LedgerConflictError extends Error {
  readonly code = 'LEDGER_CONFLICT';
  constructor() {
    super('concurrent ledger write; retry');
  }
}

/** Posts in a transaction of its own, retrying a lost race a few times. */
export async function post(db: Db, input: PostInput): Promise<PostResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await inTransaction(db, (trx) => postInTransaction(trx, input));
    } catch (e) {
      if (e instanceof LedgerConflictError && attempt < 5) continue;
      throw e;
    }
  }
}
