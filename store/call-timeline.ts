import type { Db } from './db.js';

/**
 * What a call's timeline page shows beside its events (issue 21): the status callbacks sent for it (state,
 * attempts, the last error, when it was finished) and the ledger rows it posted (the cost breakdown). Both are read
 * by the call's id through existing indexes: event_outbox (call_id, created_at), and the ledger's unique settlement
 * keys of a call's charges (billing/settlement.ts: call:ID:talk and call:ID:tts).
 */
export async function listCallWebhooks(db: Db, accountId: string, callId: string) {
  return db('event_outbox')
    .where({ call_id: callId, account_id: accountId })
    .orderBy('created_at')
    .limit(500)
    .select('id', 'event', 'url', 'attempts', 'state', 'last_error', 'created_at', 'done_at');
}

export async function listCallLedgerRows(db: Db, accountId: string, callId: string) {
  return (
    await db('wallet_transactions')
      .whereIn('settlement_key', [`call:${callId}:talk`, `call:${callId}:tts`])
      .andWhere({ account_id: accountId })
      .orderBy('seq')
      .limit(100)
      .select('kind', 'direction', 'amount_cents', 'created_at')
  ).map((r: any) => ({ ...r, amount_cents: Number(r.amount_cents) }));
}
