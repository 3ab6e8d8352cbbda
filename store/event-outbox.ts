import type { Db } from './db.js';
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
export async function insertOutboxRows(db: Db, rows: readonly NewOutboxRow[]): Promise<void> {
  await insertChunked(db, 'event_outbox', rows, OUTBOX_ROWS_PER_INSERT);
}

/**
 * Pending rows due at `now`, oldest id first, leaving out the given accounts and any row with an earlier pending
 * row of the same call (order per call), at most `limit`.
 */
export async function dueOutboxRows(
  db: Db,
  now: string,
  excludeAccounts: string[],
  limit: number,
): Promise<DueOutboxRow[]> {
  const rows = await db('event_outbox as o')
    .select(
      'o.id',
      'o.account_id',
      'o.call_id',
      'o.event',
      'o.route',
      'o.url',
      'o.body',
      'o.attempts',
      'o.next_attempt_at',
    )
    .where('o.state', 'pending')
    .where('o.next_attempt_at', '<=', now)
    .whereNotIn('o.account_id', excludeAccounts)
    .whereNotExists(function earlierOfSameCall() {
      this.select(1)
        .from('event_outbox as p')
        .where('p.state', 'pending')
        .whereRaw('p.call_id = o.call_id')
        .whereRaw('p.id < o.id');
    })
    .orderBy('o.id')
    .limit(limit);
  return rows.map((r: any) => ({ ...r, attempts: Number(r.attempts) }));
}

/**
 * The lease: moves a pending row's next attempt to `leaseUntil`, only if nobody else changed it since it was read
 * (same state and next_attempt_at). True for the one process whose update won; only it attempts the row.
 */
export async function leaseOutboxRow(db: Db, row: DueOutboxRow, leaseUntil: string): Promise<boolean> {
  const won = await db('event_outbox')
    .where({ id: row.id, state: 'pending', next_attempt_at: row.next_attempt_at })
    .update({ next_attempt_at: leaseUntil });
  return won === 1;
}

export async function updateOutboxRow(db: Db, id: string, patch: OutboxPatch): Promise<void> {
  await db('event_outbox').where({ id }).update(patch);
}

/** Deletes rows that reached a final state before `before`; pending rows are never touched. Returns how many. */
export async function purgeFinishedOutboxRows(db: Db, before: string): Promise<number> {
  return db('event_outbox').whereIn('state', ['delivered', 'failed']).where('done_at', '<', before).delete();
}
