import type { Db } from './db.js';
import { selectRows } from './fixed-sql.js';

/**
 * What a call's timeline page shows beside its events: the status callbacks sent for it (state,
 * attempts, the last error, when it was finished) and the ledger rows it posted (the cost breakdown). Both are read
 * by the call's id through existing indexes: event_outbox (call_id, id), and the ledger's unique settlement
 * keys of a call's charges (billing/settlement.ts: call:ID:talk and call:ID:tts).
 */
export interface CallWebhookRow {
  id: string;
  event: string;
  url: string;
  attempts: number;
  state: string;
  last_error: string | null;
  created_at: string;
  done_at: string | null;
}

export async function listCallWebhooks(db: Db, accountId: string, callId: string): Promise<CallWebhookRow[]> {
  return (await selectRows(
    db,
    'select "id", "event", "url", "attempts", "state", "last_error", "created_at", "done_at" from "event_outbox" ' +
      'where "call_id" = ? and "account_id" = ? order by "created_at" asc limit 500',
    [callId, accountId],
  )) as unknown as CallWebhookRow[];
}

export async function listCallLedgerRows(db: Db, accountId: string, callId: string) {
  return (
    await selectRows(
      db,
      'select "kind", "direction", "amount_cents", "created_at" from "wallet_transactions" ' +
        'where "settlement_key" in (?, ?) and "account_id" = ? order by "seq" asc limit 100',
      [`call:${callId}:talk`, `call:${callId}:tts`, accountId],
    )
  ).map((r: any) => ({ ...r, amount_cents: Number(r.amount_cents) }));
}
