import {
  findLedgerRowBySettlementKey,
  findWalletTopup,
  findAccount,
  inTransaction,
  insertWalletTopup,
  isUniqueViolation,
  newId,
  type Db,
  type Tx,
  type WalletTopupRow,
} from '../store/index.js';
import { LedgerConflictError, postInTransaction } from './ledger.js';
import { CURRENCY } from './money.js';

/**
 * Top-ups as a mobile-money provider confirms them. A payment credits the account once per
 * receipt; its reversal debits it once. The ledger row carries the receipt in its settlement key
 * (`mm:<provider>:<receipt>`, and `...:reversal`), and `wallet_topups` keeps the callback beside it, so
 * `reconcileTopups` can prove the two agree. The signature and timestamp are checked by the caller (api/) before
 * anything here runs.
 */
export const TOPUP_KEY_PREFIX = 'mm:';

export interface TopupPayment {
  provider: string;
  receipt: string;
  accountId: string;
  amountCents: number;
  currency: string;
  msisdn: string;
  paidAt: string;
}

export interface TopupReversal {
  provider: string;
  /** The receipt of the payment being reversed. */
  receipt: string;
  /** The provider's own id of the reversal (kept in `reference`). */
  reference: string;
  amountCents: number;
  currency: string;
  msisdn: string;
  paidAt: string;
}

export interface TopupOutcome {
  duplicate: boolean;
  topup: WalletTopupRow;
}

/** A callback that is well signed but cannot be applied; nothing was written. */
export class TopupRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TopupRefusedError';
  }
}

const keyOf = (provider: string, receipt: string, kind: 'payment' | 'reversal'): string =>
  `${TOPUP_KEY_PREFIX}${provider}:${receipt}${kind === 'reversal' ? ':reversal' : ''}`;

function checkCurrency(currency: string): void {
  if (currency !== CURRENCY)
    throw new TopupRefusedError(422, 'TOPUP_CURRENCY', `Only ${CURRENCY} is accepted; the callback says ${currency}.`);
}

/** Retries a transaction that lost a race (a unique index hit) so the loser finds the winner's row. */
async function once<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if ((e instanceof LedgerConflictError || isUniqueViolation(e)) && attempt < 5) continue;
      throw e;
    }
  }
}

/** The ledger posting of one top-up callback, and what its `wallet_topups` row says beside it. */
interface TopupWrite {
  accountId: string;
  /** What the callback asked for; the ledger may post less (a reversal capped at the balance). */
  amountCents: number;
  reference: string | null;
  post: { direction: 'credit' | 'debit'; kind: 'topup' | 'adjustment'; capAtBalance?: boolean };
}

/**
 * Applies a callback once per (provider, receipt, kind), in one transaction: a repeat finds the first one's row;
 * otherwise `check` (reading in the transaction) says what to post, the ledger row is posted under the callback's
 * settlement key and the `wallet_topups` row written beside it.
 */
function applyOnce(
  db: Db,
  c: {
    provider: string;
    receipt: string;
    kind: WalletTopupRow['kind'];
    currency: string;
    msisdn: string;
    paidAt: string;
  },
  check: (trx: Db | Tx) => Promise<TopupWrite>,
): Promise<TopupOutcome> {
  return once(() =>
    inTransaction(db, async (trx) => {
      const prior = await findWalletTopup(trx, c.provider, c.receipt, c.kind);
      if (prior) return { duplicate: true, topup: prior };
      const w = await check(trx);
      const key = keyOf(c.provider, c.receipt, c.kind);
      const posted = await postInTransaction(trx, {
        accountId: w.accountId,
        amountCents: w.amountCents,
        settlementKey: key,
        ...w.post,
      });
      const ledger = (await findLedgerRowBySettlementKey(trx, key))!;
      const row: WalletTopupRow = {
        id: newId(),
        provider: c.provider,
        receipt: c.receipt,
        kind: c.kind,
        reference: w.reference,
        account_id: w.accountId,
        amount_cents: w.amountCents,
        posted_cents: posted.amountCents,
        currency: c.currency,
        msisdn: c.msisdn,
        paid_at: c.paidAt,
        received_at: ledger.created_at,
        ledger_id: ledger.id,
      };
      await insertWalletTopup(trx, row);
      return { duplicate: false, topup: row };
    }),
  );
}

/** Credits a confirmed payment once per (provider, receipt). */
export async function applyTopupPayment(db: Db, p: TopupPayment): Promise<TopupOutcome> {
  checkCurrency(p.currency);
  if (!(await findAccount(db, p.accountId)))
    throw new TopupRefusedError(404, 'TOPUP_UNKNOWN_ACCOUNT', 'No account has this account reference.');
  return applyOnce(db, { ...p, kind: 'payment' }, async () => ({
    accountId: p.accountId,
    amountCents: p.amountCents,
    reference: null,
    post: { direction: 'credit', kind: 'topup' },
  }));
}

/**
 * Reverses a payment once: debits what it credited, from the account it credited. Money already spent cannot be
 * taken back below zero (the ledger never goes negative), so `posted_cents` may be less than the amount; the
 * reconcile report shows the difference as unrecovered.
 */
export async function applyTopupReversal(db: Db, r: TopupReversal): Promise<TopupOutcome> {
  checkCurrency(r.currency);
  return applyOnce(db, { ...r, kind: 'reversal' }, async (trx) => {
    const payment = await findWalletTopup(trx, r.provider, r.receipt, 'payment');
    if (!payment)
      throw new TopupRefusedError(404, 'TOPUP_UNKNOWN_RECEIPT', 'No payment with this receipt was received.');
    if (payment.amount_cents !== r.amountCents)
      throw new TopupRefusedError(
        422,
        'TOPUP_AMOUNT_MISMATCH',
        'A reversal must be for the whole amount of the payment it reverses.',
      );
    return {
      accountId: payment.account_id,
      amountCents: payment.posted_cents,
      reference: r.reference,
      post: { direction: 'debit', kind: 'adjustment', capAtBalance: true },
    };
  });
}
