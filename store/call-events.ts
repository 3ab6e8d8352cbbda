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
 * A delivered status callback is listed among its call's events as WH.0200 (events/catalogue.ts), read from its
 * outbox row (`done_at`, `reply_status`): a delivery writes no call event of its own. Rows delivered before the
 * outbox kept `reply_status` have their WH.0200 stored in call_events instead, so each delivery is listed once.
 */
const DELIVERED_AS_EVENTS =
  'select \'WH.0200\' as "code", \'webhook.delivered\' as "event", null as "data", "done_at" as "created_at", "id", ' +
  '"event" as "cb_event", "url" as "cb_url", "route" as "cb_route", "attempts" as "cb_attempts", ' +
  '"reply_status" as "cb_status" from "event_outbox" where "account_id" = ? and "call_id" = ? ' +
  'and "state" = \'delivered\' and "reply_status" is not null';

const STORED_EVENTS =
  'select "code", "event", "data", "created_at", "id", null as "cb_event", null as "cb_url", null as "cb_route", ' +
  'null as "cb_attempts", null as "cb_status" from "call_events" where "account_id" = ? and "call_id" = ?';

const CALL_EVENTS_SQL = `${STORED_EVENTS} union all ${DELIVERED_AS_EVENTS} order by "created_at" asc, "id" asc`;

/** WH.0200's data as the outbox streams it: the delivered event's id, name, URL, route, attempts, status. */
function deliveredData(r: Record<string, unknown>): string {
  return JSON.stringify({
    eventId: r.id,
    event: r.cb_event,
    url: r.cb_url,
    route: r.cb_route,
    attempts: Number(r.cb_attempts),
    status: Number(r.cb_status),
  });
}

/**
 * A call's events in the order they happened (ties by id, which grows with time), scoped to the account: all of
 * them (the portal's timeline) or one page (GET /api/calls/{uuid}/events). Its delivered status callbacks are
 * among them as WH.0200.
 */
export async function listCallEvents(
  db: Db | Tx,
  accountId: string,
  callId: string,
  page?: { limit: number; offset: number },
): Promise<CallEventRow[]> {
  const keys = [accountId, callId, accountId, callId];
  const rows = page
    ? await selectRows(db, `${CALL_EVENTS_SQL} limit ? offset ?`, [...keys, page.limit, page.offset])
    : await selectRows(db, CALL_EVENTS_SQL, keys);
  return rows.map((r) => ({
    code: String(r.code),
    event: String(r.event),
    data: r.cb_event == null ? String(r.data) : deliveredData(r),
    created_at: String(r.created_at),
  }));
}

/** How many events a call of the account has (its delivered status callbacks' WH.0200 included). */
export async function countCallEvents(db: Db | Tx, accountId: string, callId: string): Promise<number> {
  const r = await sqlOf(db).get(
    'select (select count(*) from "call_events" where "account_id" = ? and "call_id" = ?) + ' +
      '(select count(*) from "event_outbox" where "account_id" = ? and "call_id" = ? and "state" = \'delivered\' ' +
      'and "reply_status" is not null) as "n"',
    [accountId, callId, accountId, callId],
  );
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
