import type { Db, Tx } from './db.js';
import { runSqlCount, selectRows, updateRowCount } from './fixed-sql.js';
import { insertChunked } from './insert-chunked.js';

/**
 * Status callbacks waiting for delivery (table `event_outbox`, events/outbox.ts): at least once, in order per call,
 * durable across restarts. A row is pending until delivered or failed (final states, purged later).
 */
export type OutboxState = 'pending' | 'delivered' | 'failed';

/** What the delivery loop needs of a due row. */
export interface DueOutboxRow {
  id: string;
  account_id: string;
  call_id: string | null;
  event: string;
  /**
   * The status route the callback was queued for (store/webhook-routes.ts RouteRef): failures count against
   * (account, route, url).
   */
  route: string;
  url: string;
  body: string;
  attempts: number;
  next_attempt_at: string;
}

/** A row as queued: what the delivery loop reads of it, and its state. */
export interface NewOutboxRow extends DueOutboxRow {
  state: OutboxState;
  last_error: string | null;
  created_at: string;
  done_at: string | null;
}

export type OutboxPatch = Partial<
  Pick<NewOutboxRow, 'state' | 'attempts' | 'last_error' | 'next_attempt_at' | 'done_at'>
>;

/** Rows per INSERT statement: 13 columns each, well under the bound-parameter limits of both stores. */
const OUTBOX_ROWS_PER_INSERT = 200;

/** Queues many status callbacks in one statement per 200 (the publisher's group commit), in the order given. */
export async function insertOutboxRows(db: Db | Tx, rows: readonly NewOutboxRow[]): Promise<void> {
  await insertChunked(db, 'event_outbox', rows, OUTBOX_ROWS_PER_INSERT);
}

const DUE_COLUMNS = ['id', 'account_id', 'call_id', 'event', 'route', 'url', 'body', 'attempts', 'next_attempt_at']
  .map((c) => `"o"."${c}"`)
  .join(', ');
/** The claim's text by how many accounts it leaves out (a handful at most: those at their share of the slots). */
const dueSql: string[] = [];

/**
 * Pending rows due at `now`, oldest id first, leaving out the given accounts and any row with an earlier pending
 * row of the same call (order per call), at most `limit`. Fixed SQL (store/fixed-sql.ts): the outbox's statements
 * run for every status callback, 13 a carrier call.
 */
export async function dueOutboxRows(
  db: Db | Tx,
  now: string,
  excludeAccounts: readonly string[],
  limit: number,
): Promise<DueOutboxRow[]> {
  const n = excludeAccounts.length;
  const sql = (dueSql[n] ??=
    `select ${DUE_COLUMNS} from "event_outbox" "o" where "o"."state" = 'pending' and "o"."next_attempt_at" <= ?` +
    (n > 0 ? ` and "o"."account_id" not in (${Array(n).fill('?').join(', ')})` : '') +
    ` and not exists (${EARLIER_PENDING_OF_CALL}"o"."call_id" and "p"."id" < "o"."id") order by "o"."id" limit ?`);
  const rows = await selectRows(db, sql, [now, ...excludeAccounts, limit]);
  return rows.map((r) => ({ ...(r as unknown as DueOutboxRow), attempts: Number(r.attempts) }));
}

const EARLIER_PENDING_OF_CALL = `select 1 from "event_outbox" "p" where "p"."state" = 'pending' and "p"."call_id" = `;
const LEASE_SQL =
  `update "event_outbox" set "next_attempt_at" = ? where "id" = ? and "state" = 'pending' and "next_attempt_at" = ?` +
  ` and not exists (${EARLIER_PENDING_OF_CALL}? and "p"."id" < ?)`;

/**
 * The lease: moves a pending row's next attempt to `leaseUntil`, only if nobody else changed it since it was read
 * (same state and next_attempt_at) and no earlier row of its call is pending (order per call, whoever queued that
 * one). True for the one process whose update won; only it attempts the row.
 */
export async function leaseOutboxRow(db: Db | Tx, row: DueOutboxRow, leaseUntil: string): Promise<boolean> {
  const won = await runSqlCount(
    db,
    LEASE_SQL,
    [leaseUntil, row.id, row.next_attempt_at, row.call_id, row.id],
    'event_outbox',
  );
  return won === 1;
}

export async function updateOutboxRow(db: Db | Tx, id: string, patch: OutboxPatch): Promise<void> {
  await updateRowCount(db, 'event_outbox', { column: 'id', value: id }, patch);
}

/** Deletes rows that reached a final state before `before`; pending rows are never touched. Returns how many. */
export async function purgeFinishedOutboxRows(db: Db | Tx, before: string): Promise<number> {
  return runSqlCount(
    db,
    `delete from "event_outbox" where "state" in ('delivered', 'failed') and "done_at" < ?`,
    [before],
    'event_outbox',
  );
}
