import type { Db } from './db.js';
import { insertRows, runSql } from './fixed-sql.js';

/**
 * Live credit state of an answered call (table `call_credit`, billing/credit-monitor): from answer until the call
 * is settled. The reconcile sweep bills a call whose process died from it; a watchdog reads its heartbeat; monitors
 * on other nodes read what it has committed.
 */
export interface CallCreditRow {
  call_id: string;
  account_id: string;
  node_id: string | null;
  rate_cents_per_minute: number;
  tts_cents: number;
  tts_seconds: number;
  committed_cents: number;
  answered_at: string;
  heartbeat_at: string;
}

const normalise = (r: any): CallCreditRow => ({
  ...r,
  rate_cents_per_minute: Number(r.rate_cents_per_minute),
  tts_cents: Number(r.tts_cents),
  tts_seconds: Number(r.tts_seconds),
  committed_cents: Number(r.committed_cents),
});

export interface NewCallCredit {
  call_id: string;
  account_id: string;
  node_id: string | null;
  rate_cents_per_minute: number;
  answered_at: string;
  heartbeat_at: string;
}

export async function insertCallCredit(db: Db, row: NewCallCredit): Promise<void> {
  await insertRows(db, 'call_credit', [row as unknown as Record<string, unknown>]);
}

export async function findCallCredit(db: Db, callId: string): Promise<CallCreditRow | undefined> {
  const row = await db('call_credit').where({ call_id: callId }).first();
  return row ? normalise(row) : undefined;
}

/** The speech priced so far on a live call. */
export async function setCallCreditTts(db: Db, callId: string, ttsCents: number, ttsSeconds: number): Promise<void> {
  await db('call_credit').where({ call_id: callId }).update({ tts_cents: ttsCents, tts_seconds: ttsSeconds });
}

/** Deleted in the transaction that settles the call. */
export async function deleteCallCredit(db: Db, callId: string): Promise<void> {
  await runSql(db, 'delete from "call_credit" where "call_id" = ?', [callId]);
}

/** What the account's live calls on other nodes have committed, counting rows with a heartbeat at or after `since`. */
export async function committedElsewhere(db: Db, accountId: string, nodeId: string, since: string): Promise<number> {
  const row = await db('call_credit')
    .where({ account_id: accountId })
    .whereNot({ node_id: nodeId })
    .where('heartbeat_at', '>=', since)
    .sum({ s: 'committed_cents' })
    .first();
  return Number(row?.s ?? 0);
}

/**
 * One heartbeat for a batch of calls: `heartbeat_at` and each call's committed cents, in one statement. Returns
 * how many rows it updated (fewer than given when some were settled elsewhere). Keep batches to a few hundred.
 */
export async function heartbeatCallCredits(
  db: Db,
  at: string,
  calls: { callId: string; committedCents: number }[],
): Promise<number> {
  if (!calls.length) return 0;
  const committed = db.raw(
    `CASE call_id ${calls.map(() => 'WHEN ? THEN CAST(? AS BIGINT)').join(' ')} ELSE committed_cents END`,
    calls.flatMap((c) => [c.callId, c.committedCents]),
  );
  return db('call_credit')
    .whereIn(
      'call_id',
      calls.map((c) => c.callId),
    )
    .update({ heartbeat_at: at, committed_cents: committed });
}

/** The heartbeats of those of these calls that still have a credit row. */
export async function callCreditHeartbeats(
  db: Db,
  callIds: string[],
): Promise<{ call_id: string; heartbeat_at: string }[]> {
  return db('call_credit').whereIn('call_id', callIds).select('call_id', 'heartbeat_at');
}
