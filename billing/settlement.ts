import {
  deleteCallCredit,
  inTransaction,
  isPostgres,
  isUniqueViolation,
  newId,
  nowIso,
  postCappedDebit,
  settleCappedDebitsOnPg,
  ledgerRowsBySettlementKeys,
  type CappedDebit,
  type Db,
  type Tx,
  type WalletTransactionRow,
} from '../store/index.js';
import { LedgerConflictError, type LedgerKind } from './ledger.js';
import { formatMoney } from './money.js';
import { BillingCodes, type BillingEmit } from './codes.js';

/**
 * Exactly-once settlement of a call: one ledger row per call and kind, under the settlement keys
 * `call:<id>:talk` and `call:<id>:tts`. A second settlement (twice, concurrently, or from the reconcile sweep in
 * another process) finds the key taken and returns the amounts first posted. A debit is capped at the balance
 * (the time was already consumed), so the wallet stops at zero and never goes negative.
 */
export interface CallCharge {
  accountId: string;
  callId: string;
  talkCents: number;
  ttsCents: number;
}

export interface PostedCharge {
  kind: LedgerKind;
  settlementKey: string;
  amountCents: number;
  balanceAfterCents: number;
  duplicate: boolean;
}

export interface CallSettlementResult {
  /** What the ledger holds for this call: the amounts actually posted (after any cap), not the rated ones. */
  talkCents: number;
  ttsCents: number;
  costCents: number;
  /** Balance after this settlement's last posted row; undefined when nothing was posted. */
  balanceAfterCents: number | undefined;
  /** Rows posted by this settlement (not duplicates): the BILL.0300 events to emit. */
  posted: PostedCharge[];
}

export const talkKey = (callId: string): string => `call:${callId}:talk`;
export const ttsKey = (callId: string): string => `call:${callId}:tts`;

/** A charge already in the ledger under its key: what a second settlement returns (exactly once). */
function priorCharge(kind: LedgerKind, key: string, prior: WalletTransactionRow): PostedCharge {
  const before = prior.balance_before_cents;
  const amt = prior.amount_cents;
  return { kind, settlementKey: key, amountCents: amt, balanceAfterCents: before - amt, duplicate: true };
}

const KINDS: readonly LedgerKind[] = ['call', 'tts'];
const keysOf = (callId: string) => [talkKey(callId), ttsKey(callId)] as const;

/** The call's debits to post: those rated above zero (a zero row would only be noise), in key order. */
function debitsOf(c: CallCharge): { i: number; debit: CappedDebit }[] {
  const keys = keysOf(c.callId);
  const cents = [c.talkCents, c.ttsCents];
  for (const n of cents) if (!Number.isInteger(n)) throw new Error('amountCents must be a non-negative integer');
  return [0, 1]
    .filter((i) => cents[i]! > 0)
    .map((i) => ({
      i,
      debit: {
        row: {
          id: newId(),
          account_id: c.accountId,
          kind: KINDS[i]!,
          call_id: c.callId,
          settlement_key: keys[i]!,
          created_at: nowIso(),
        },
        cents: cents[i]!,
      },
    }));
}

/**
 * The settlement's rows, what it posted and what an earlier settlement had posted under the other keys. The keys
 * are read only when an earlier settlement may exist: the call's live credit row was not there to delete (each
 * settlement deletes it in its own transaction, and it is written at answer, before the call can end), or a post
 * found its key taken. A first settlement, the usual one, reads nothing. `db` sees the posts (the same transaction,
 * or after its commit).
 */
async function withPrior(
  db: Db | Tx,
  c: CallCharge,
  rows: (PostedCharge | undefined)[],
  toPost: readonly number[],
  hadCredit: boolean,
): Promise<CallSettlementResult> {
  const keys = keysOf(c.callId);
  if (!hadCredit || toPost.some((i) => !rows[i])) {
    const found = new Map((await ledgerRowsBySettlementKeys(db, [...keys])).map((r) => [r.settlement_key, r]));
    for (const i of [0, 1]) {
      const prior = found.get(keys[i]!);
      if (!rows[i] && prior) rows[i] = priorCharge(KINDS[i]!, keys[i]!, prior);
    }
    // Neither posted nor found: the account's row is gone (the post reads its balance from it).
    if (toPost.some((i) => !rows[i])) throw new Error(`account ${c.accountId} not found`);
  }
  return resultOf(rows);
}

/** Settles inside the caller's transaction (the reconcile sweep closes the call row in the same one). */
export async function settleCallInTransaction(trx: Tx, c: CallCharge): Promise<CallSettlementResult> {
  const debits = debitsOf(c);
  // The live credit row has done its job once the call is settled (the same transaction). Deleted before the posts:
  // a post locks the account row until the commit, and every other settlement of the account waits for that lock.
  const hadCredit = (await deleteCallCredit(trx, c.callId)) > 0;
  const rows: (PostedCharge | undefined)[] = [undefined, undefined];
  for (const { i, debit } of debits) {
    let p;
    try {
      // A taken key posts nothing (the insert checks it): never charged twice.
      p = await postCappedDebit(trx, debit);
    } catch (e) {
      if (isUniqueViolation(e)) throw new LedgerConflictError();
      throw e;
    }
    if (p) rows[i] = posted(i, debit.row.settlement_key!, p.amountCents, p.balanceBeforeCents);
  }
  return withPrior(
    trx,
    c,
    rows,
    debits.map((d) => d.i),
    hadCredit,
  );
}

const posted = (i: number, key: string, amountCents: number, before: number): PostedCharge => ({
  kind: KINDS[i]!,
  settlementKey: key,
  amountCents,
  balanceAfterCents: before - amountCents,
  duplicate: false,
});

/** BILL.0300 (wallet.debited) for each row a settlement posted. */
export function emitDebits(emit: BillingEmit | undefined, accountId: string, callId: string, s: CallSettlementResult) {
  if (!emit) return;
  for (const p of s.posted) {
    if (p.amountCents === 0) continue; // capped to nothing: the row marks the settlement, no money moved
    try {
      emit(accountId, BillingCodes.walletDebited, {
        callId,
        kind: p.kind,
        amount: formatMoney(p.amountCents),
        balance: formatMoney(p.balanceAfterCents),
        settlementKey: p.settlementKey,
      });
    } catch {
      // A listener's failure must not undo or repeat a posted charge.
    }
  }
}

/**
 * PostgreSQL: the same settlement in one transaction sent at once (store settleCappedDebitsOnPg), so the account
 * row is locked only while PostgreSQL runs the posts, not across round trips. The keys are read after the commit,
 * and only when an earlier settlement may have posted under them (withPrior).
 */
async function settleOnPg(db: Db, c: CallCharge): Promise<CallSettlementResult> {
  const debits = debitsOf(c);
  let r;
  try {
    r = await settleCappedDebitsOnPg(
      db,
      c.accountId,
      c.callId,
      debits.map((d) => d.debit),
    );
  } catch (e) {
    if (isUniqueViolation(e)) throw new LedgerConflictError();
    throw e;
  }
  const rows: (PostedCharge | undefined)[] = [undefined, undefined];
  debits.forEach(({ i, debit }, n) => {
    const p = r.posted[n];
    if (p) rows[i] = posted(i, debit.row.settlement_key!, p.amountCents, p.balanceBeforeCents);
  });
  return withPrior(
    db,
    c,
    rows,
    debits.map((d) => d.i),
    r.hadCredit,
  );
}

function resultOf(rows: (PostedCharge | undefined)[]): CallSettlementResult {
  const talk = rows[0]?.amountCents ?? 0;
  const tts = rows[1]?.amountCents ?? 0;
  const last = rows.filter((r) => r && !r.duplicate).pop() ?? rows.filter(Boolean).pop();
  return {
    talkCents: talk,
    ttsCents: tts,
    costCents: talk + tts,
    balanceAfterCents: last?.balanceAfterCents,
    posted: rows.filter((r): r is PostedCharge => !!r && !r.duplicate),
  };
}

/** Settles a call in a transaction of its own, retrying a lost race on the ledger; emits BILL.0300 per row. */
export async function settleCall(db: Db, c: CallCharge, emit?: BillingEmit): Promise<CallSettlementResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      const s = isPostgres(db)
        ? await settleOnPg(db, c)
        : await inTransaction(db, (trx) => settleCallInTransaction(trx, c));
      emitDebits(emit, c.accountId, c.callId, s);
      return s;
    } catch (e) {
      if (e instanceof LedgerConflictError && attempt < 5) continue;
      throw e;
    }
  }
}

/** What the ledger already holds for a call (for a settlement asked of a process that no longer knows the call). */
export async function settledCharges(db: Db, callId: string): Promise<{ talkCents: number; ttsCents: number }> {
  const rows = await ledgerRowsBySettlementKeys(db, [talkKey(callId), ttsKey(callId)]);
  const sum = (k: string) => rows.filter((r) => r.settlement_key === k).reduce((a, r) => a + r.amount_cents, 0);
  return { talkCents: sum(talkKey(callId)), ttsCents: sum(ttsKey(callId)) };
}
