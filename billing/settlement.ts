import {
  deleteCallCredit,
  inTransaction,
  isPostgres,
  isUniqueViolation,
  newId,
  nowIso,
  settleCappedDebitsOnPg,
  ledgerRowsBySettlementKeys,
  type Db,
  type Tx,
  type WalletTransactionRow,
} from '../store/index.js';
import { postInTransaction, LedgerConflictError, type LedgerKind, type PostResult } from './ledger.js';
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

async function postOne(
  trx: Tx,
  c: CallCharge,
  kind: LedgerKind,
  key: string,
  cents: number,
  prior: WalletTransactionRow | undefined,
): Promise<PostedCharge | undefined> {
  if (prior) return priorCharge(kind, key, prior);
  // Nothing to charge; a zero row would only be noise.
  if (cents <= 0) return undefined;
  const r: PostResult = await postInTransaction(
    trx,
    {
      accountId: c.accountId,
      direction: 'debit',
      kind,
      amountCents: cents,
      callId: c.callId,
      settlementKey: key,
      capAtBalance: true,
    },
    { keyChecked: true },
  );
  return {
    kind,
    settlementKey: key,
    amountCents: r.amountCents,
    balanceAfterCents: r.balanceAfterCents,
    duplicate: r.duplicate,
  };
}

/** Settles inside the caller's transaction (the reconcile sweep closes the call row in the same one). */
export async function settleCallInTransaction(trx: Tx, c: CallCharge): Promise<CallSettlementResult> {
  // Both keys looked up at once; a race past this read is caught by the keys' unique index (LedgerConflictError:
  // the caller's retry reads again and finds the other's row).
  const keys = [talkKey(c.callId), ttsKey(c.callId)] as const;
  const prior = new Map((await ledgerRowsBySettlementKeys(trx, [...keys])).map((r) => [r.settlement_key, r]));
  // The live credit row has done its job once the call is settled (the same transaction). Deleted before the posts:
  // a post locks the account row until the commit, and every other settlement of the account waits for that lock.
  await deleteCallCredit(trx, c.callId);
  const rows = [
    await postOne(trx, c, 'call', keys[0], c.talkCents, prior.get(keys[0])),
    await postOne(trx, c, 'tts', keys[1], c.ttsCents, prior.get(keys[1])),
  ];
  return resultOf(rows);
}

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
 * row is locked only while PostgreSQL runs the posts, not across round trips. A debit whose key another settlement
 * took meanwhile (neither seen before nor posted) is a lost race: settled again, it finds that row.
 */
async function settleOnPg(db: Db, c: CallCharge): Promise<CallSettlementResult> {
  const keys = [talkKey(c.callId), ttsKey(c.callId)] as const;
  const cents = [c.talkCents, c.ttsCents];
  const kinds: LedgerKind[] = ['call', 'tts'];
  for (const n of cents) if (!Number.isInteger(n)) throw new Error('amountCents must be a non-negative integer');
  const toPost = [0, 1].filter((i) => cents[i]! > 0);
  const row = (i: number) => ({
    id: newId(),
    account_id: c.accountId,
    kind: kinds[i]!,
    call_id: c.callId,
    settlement_key: keys[i]!,
    created_at: nowIso(),
  });
  const debits = toPost.map((i) => ({ row: row(i), cents: cents[i]! }));
  let r;
  try {
    r = await settleCappedDebitsOnPg(db, c.accountId, c.callId, [...keys], debits);
  } catch (e) {
    if (isUniqueViolation(e)) throw new LedgerConflictError();
    throw e;
  }
  const prior = new Map(r.prior.map((p) => [p.settlement_key, p]));
  const rows: (PostedCharge | undefined)[] = [undefined, undefined];
  for (const i of [0, 1]) {
    const p = prior.get(keys[i]!);
    if (p) rows[i] = priorCharge(kinds[i]!, keys[i]!, p);
  }
  toPost.forEach((i, n) => {
    if (rows[i]) return; // posted before: the statement found the key taken and posted nothing
    const posted = r.posted[n];
    if (!posted) throw new LedgerConflictError();
    const { amountCents, balanceBeforeCents } = posted;
    const after = balanceBeforeCents - amountCents;
    rows[i] = { kind: kinds[i]!, settlementKey: keys[i]!, amountCents, balanceAfterCents: after, duplicate: false };
  });
  return resultOf(rows);
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
