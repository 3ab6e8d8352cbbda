import type { Db, Tx } from './db.js';
import { selectRows } from './fixed-sql.js';
import { insertChunked } from './insert-chunked.js';

/** One row of a call's event history (table `call_events`); `data` is the JSON text as written. */
export interface CallEventRow {
  code: string;
  event: string;
  data: string;
  created_at: string;
}

/** A call's events in the order they happened, scoped to the account. */
export async function listCallEvents(db: Db | Tx, accountId: string, callId: string): Promise<CallEventRow[]> {
  const rows = await selectRows(
    db,
    'select "code", "event", "data", "created_at" from "call_events" where "account_id" = ? and "call_id" = ? ' +
      'order by "created_at" asc',
    [accountId, callId],
  );
  return rows as unknown as CallEventRow[];
}

export interface NewCallEvent extends CallEventRow {
  id: string;
  account_id: string;
  call_id: string | null;
}

/** Rows per INSERT statement: 7 columns each, well under SQLite's and PostgreSQL's bound-parameter limits. */
const EVENTS_PER_INSERT = 500;

/** Records many events in one statement per 500 (the publisher's group commit), in the order given. */
export async function insertCallEvents(db: Db | Tx, rows: readonly NewCallEvent[]): Promise<void> {
  await insertChunked(db, 'call_events', rows, EVENTS_PER_INSERT);
}
