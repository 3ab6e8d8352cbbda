import { sqlOf, type Db, type Tx } from './db.js';
import { selectRows } from './fixed-sql.js';
import { insertChunked } from './insert-chunked.js';

/** One row of a call's event history (table `call_events`); `data` is the JSON text as written. */
export interface CallEventRow {
  code: string;
  event: string;
  data: string;
  created_at: string;
}

/**
 * A call's events in the order they happened (ties by id, which grows with time), scoped to the account: all of
 * them (the portal's timeline) or one page (GET /api/calls/{uuid}/events).
 */
export async function listCallEvents(
  db: Db | Tx,
  accountId: string,
  callId: string,
  page?: { limit: number; offset: number },
): Promise<CallEventRow[]> {
  const base =
    'select "code", "event", "data", "created_at" from "call_events" where "account_id" = ? and "call_id" = ? ' +
    'order by "created_at" asc, "id" asc';
  const rows = page
    ? await selectRows(db, `${base} limit ? offset ?`, [accountId, callId, page.limit, page.offset])
    : await selectRows(db, base, [accountId, callId]);
  return rows as unknown as CallEventRow[];
}

/** How many events a call of the account has. */
export async function countCallEvents(db: Db | Tx, accountId: string, callId: string): Promise<number> {
  const r = await sqlOf(db).get('select count(*) as "n" from "call_events" where "account_id" = ? and "call_id" = ?', [
    accountId,
    callId,
  ]);
  return Number(r?.n ?? 0);
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
