import type { Db } from './db.js';
import { insertChunked } from './insert-chunked.js';

/** One row of a call's event history (table `call_events`); `data` is the JSON text as written. */
export interface CallEventRow {
  code: string;
  event: string;
  data: string;
  created_at: string;
}

/** A call's events in the order they happened, scoped to the account. */
export async function listCallEvents(db: Db, accountId: string, callId: string): Promise<CallEventRow[]> {
  return db('call_events')
    .where({ account_id: accountId, call_id: callId })
    .orderBy('created_at')
    .select('code', 'event', 'data', 'created_at');
}

export interface NewCallEvent extends CallEventRow {
  id: string;
  account_id: string;
  call_id: string | null;
}

/** Rows per INSERT statement: 7 columns each, well under SQLite's and PostgreSQL's bound-parameter limits. */
const EVENTS_PER_INSERT = 500;

/** Records many events in one statement per 500 (the publisher's group commit), in the order given. */
export async function insertCallEvents(db: Db, rows: readonly NewCallEvent[]): Promise<void> {
  await insertChunked(db, 'call_events', rows, EVENTS_PER_INSERT);
}
