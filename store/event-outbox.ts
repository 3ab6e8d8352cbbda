import { sqlOf, type Db, type Tx } from './db.js';
import { deleteInBatches, runSqlCount, selectRows, updateRowCount } from './fixed-sql.js';
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
  /**
   * The node whose lease the row is under (a row is queued already leased to the process that will send it:
   * `next_attempt_at` is then the lease's end), or null.
   */
  leased_by: string | null;
  state: OutboxState;
  last_error: string | null;
  created_at: string;
  done_at: string | null;
}

export type OutboxPatch = Partial<
  Pick<NewOutboxRow, 'state' | 'attempts' | 'last_error' | 'next_attempt_at' | 'done_at'> & {
    /** The HTTP status the receiver delivered it with (a delivered row's WH.0200, store/call-events.ts). */
    reply_status: number;
  }
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
 * run for every status callback, 13 a carrier call. Ordered by an expression of the id, not the id itself, so
 * SQLite reads the due rows through their index and sorts those few, instead of walking the whole table in id order
 * for the limit.
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
    ` and not exists (${EARLIER_PENDING_OF_CALL}"o"."call_id" and "p"."id" < "o"."id") order by "o"."id" || '' limit ?`);
  const rows = await selectRows(db, sql, [now, ...excludeAccounts, limit]);
  return rows.map((r) => ({ ...(r as unknown as DueOutboxRow), attempts: Number(r.attempts) }));
}

/**
 * An earlier pending row of the call: found through (call_id, id), whose columns never change, each earlier row's
 * state read from the table (indexes never name `state`, so a delivered mark moves no index entry; migration 043).
 */
const EARLIER_PENDING_OF_CALL = `select 1 from "event_outbox" "p" where "p"."state" = 'pending' and "p"."call_id" = `;
export async function updateOutboxRow(db: Db | Tx, id: string, patch: OutboxPatch): Promise<void> {
  await updateRowCount(db, 'event_outbox', { column: 'id', value: id }, patch);
}

/** Ids per batched statement at most; lists are padded to a power of two so a handful of statement texts serve. */
const IDS_PER_STATEMENT = 256;

/** `ids` padded (with its last id, harmless in an IN list) to the next power of two. */
function paddedIds(ids: readonly string[]): string[] {
  let n = 1;
  while (n < ids.length) n *= 2;
  const out = [...ids];
  while (out.length < n) out.push(ids[ids.length - 1]!);
  return out;
}

const marks = (n: number): string => Array(n).fill('?').join(', ');

const LEASE_BATCH_SQL = (n: number): string =>
  `update "event_outbox" set "next_attempt_at" = ?, "leased_by" = ? where "id" in (${marks(n)})` +
  ` and "state" = 'pending' and ("next_attempt_at" <= ? or "leased_by" = ?)` +
  ` and not exists (${EARLIER_PENDING_OF_CALL}"event_outbox"."call_id" and "p"."id" < "event_outbox"."id")` +
  ` returning "id", "attempts"`;

/**
 * The lease of many rows in one statement per 256: each pending row that is due at `now` (nobody holds a lease on it)
 * or whose lease is `node`'s own, and has no earlier pending row of its call, gets its next attempt moved to
 * `leaseUntil`, leased to `node`. Returns the attempts made so far of each row won, by id; only the process whose
 * update won a row attempts it.
 */
export async function leaseOutboxRows(
  db: Db,
  ids: readonly string[],
  leaseUntil: string,
  now: string,
  node: string,
): Promise<Map<string, number>> {
  const won = new Map<string, number>();
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    const chunk = paddedIds(ids.slice(i, i + IDS_PER_STATEMENT));
    const rows = await sqlOf(db).all(
      LEASE_BATCH_SQL(chunk.length),
      [leaseUntil, node, ...chunk, now, node],
      'event_outbox',
    );
    for (const r of rows) won.set(String(r.id), Number(r.attempts));
  }
  return won;
}

const NOT_SENDABLE_SQL = (n: number): string =>
  `select "id" from "event_outbox" where "id" in (${marks(n)}) and (not "state" = 'pending'` +
  ` or "leased_by" is null or not "leased_by" = ?` +
  ` or exists (${EARLIER_PENDING_OF_CALL}"event_outbox"."call_id" and "p"."id" < "event_outbox"."id"))`;

/**
 * Of the given rows, queued leased to `node`, those it may not send under that lease: an earlier row of their call
 * still pending (whoever queued it), or the lease no longer `node`'s (ended when the node was declared gone, the row
 * perhaps sent by another since). The checks a lease makes, by one read per 256.
 */
export async function outboxRowsNotSendable(db: Db, ids: readonly string[], node: string): Promise<Set<string>> {
  const behind = new Set<string>();
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    const chunk = paddedIds(ids.slice(i, i + IDS_PER_STATEMENT));
    for (const r of await selectRows(db, NOT_SENDABLE_SQL(chunk.length), [...chunk, node])) behind.add(String(r.id));
  }
  return behind;
}

/**
 * Ends `node`'s leases: on the given pending rows, or on all of them (`ids` undefined: the node starting again, its
 * earlier process gone). They are due at `now`, for whichever process takes them first. Returns how many.
 */
export async function releaseOutboxLeases(db: Db, node: string, now: string, ids?: readonly string[]): Promise<number> {
  const sql =
    `update "event_outbox" set "next_attempt_at" = ?, "leased_by" = null where "state" = 'pending'` +
    ` and "leased_by" = ?`;
  if (ids === undefined) return runSqlCount(db, sql, [now, node], 'event_outbox');
  let n = 0;
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    const chunk = paddedIds(ids.slice(i, i + IDS_PER_STATEMENT));
    n += await runSqlCount(db, `${sql} and "id" in (${marks(chunk.length)})`, [now, node, ...chunk], 'event_outbox');
  }
  return n;
}

const DELIVERED_SQL = (n: number): string =>
  `update "event_outbox" set "state" = 'delivered', "attempts" = ?, "reply_status" = ?, "last_error" = null,` +
  ` "done_at" = ? where "id" in (${marks(n)}) and "state" = 'pending'`;

/**
 * Marks rows delivered with the HTTP status each was answered with, one statement per distinct attempt count and
 * status (almost always one) and per 256 rows.
 */
export async function markOutboxRowsDelivered(
  db: Db,
  rows: ReadonlyArray<{ id: string; attempts: number; status: number }>,
  doneAt: string,
): Promise<void> {
  const byOutcome = new Map<string, { attempts: number; status: number; ids: string[] }>();
  for (const r of rows) {
    const key = `${r.attempts} ${r.status}`;
    const group = byOutcome.get(key);
    if (group) group.ids.push(r.id);
    else byOutcome.set(key, { attempts: r.attempts, status: r.status, ids: [r.id] });
  }
  for (const { attempts, status, ids } of byOutcome.values()) {
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
      const chunk = paddedIds(ids.slice(i, i + IDS_PER_STATEMENT));
      await runSqlCount(db, DELIVERED_SQL(chunk.length), [attempts, status, doneAt, ...chunk], 'event_outbox');
    }
  }
}

/**
 * The smallest UUIDv7 text of the millisecond `iso` (store/ids.ts): every id made earlier sorts below it. Ids are
 * made when a row is queued, so a row finished before `iso` has an id below it.
 */
function firstIdOf(iso: string): string {
  const h = Math.max(0, Date.parse(iso)).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-`;
}

/**
 * Deletes rows that reached a final state before `before`; pending rows are never touched. Returns how many. Read
 * through the primary key by id range (no index holds `done_at` of delivered rows: marking one delivered writes no
 * index entry).
 */
export async function purgeFinishedOutboxRows(db: Db | Tx, before: string, signal?: AbortSignal): Promise<number> {
  return deleteInBatches(
    db,
    'event_outbox',
    ['id'],
    `"id" < ? and "state" in ('delivered', 'failed') and "done_at" < ?`,
    [firstIdOf(before), before],
    signal,
  );
}
