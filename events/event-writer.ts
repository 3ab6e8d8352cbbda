import { TurnBatch } from '../kit/index.js';
import {
  findWebhookRouteCached,
  inTransaction,
  insertCallEvents,
  insertOutboxRows,
  type Db,
  type NewCallEvent,
  type NewOutboxRow,
  type Tx,
} from '../store/index.js';

/** What one event writes: its history row and, when it has a status route, its status callback. */
export interface EventWrite {
  event: NewCallEvent;
  /** `sid` is the event's (none for an account's event): handed to the outbox with the row. */
  callback?: { route: string; url: string; body: string; sid?: string };
  /**
   * A callback of the event to a URL of the customer's own beside the status route (originate's and <Number>'s
   * AMD verdict): a row of its own (`id`), delivered by the outbox like a status callback, retried and kept across a
   * restart, but outside its call's order (no `call_id`), so a failing status route does not hold it back.
   */
  alsoTo?: { id: string; route: string; url: string; body: string; sid?: string };
}

/**
 * A lease for a status callback about to be queued, from the outbox that will send it (node, end): the row is written
 * already leased, so that outbox sends it without leasing it first. Undefined: queued due, for whoever takes it.
 */
export type QueueLease = () => { node: string; until: string } | undefined;

/** How an event's status callback was queued: `route_disabled` rows are recorded as failed and never sent. */
export type CallbackWritten = 'queued' | 'route_disabled' | 'none';

/** One write's outcome in its batch: its callback's fate, or the error that failed it alone. */
type Outcome = { written: CallbackWritten } | { failed: unknown };

/** Events in one transaction at most; a burst larger than this is written in several, in order. */
const MAX_BATCH = 500;

/**
 * Group commit of events (a TurnBatch): the events emitted while a write is in progress (or within one turn of the event loop)
 * are written together, in one transaction with one INSERT per table, instead of one transaction each. Every
 * caller still waits until its own event is durable, so nothing is published or sent before it is stored; order is
 * kept (a batch is written in the order of `write` calls, batches one after another). When a batch fails, its
 * events are written again one by one, so one bad event fails alone and the others are not lost.
 *
 * `onQueued` sees each status callback queued as pending, once its batch is written, in order: the outbox of this
 * process takes it from there without reading the table for it (events/outbox.ts).
 */
export class EventWriter {
  readonly #db: Db;
  readonly #onQueued: ((row: NewOutboxRow, sid: string | undefined) => void) | undefined;
  readonly #lease: QueueLease;
  readonly #batches = new TurnBatch<EventWrite, Outcome>((writes) => this.#writeBatch(writes), { max: MAX_BATCH });

  constructor(db: Db, onQueued?: (row: NewOutboxRow, sid: string | undefined) => void, lease?: QueueLease) {
    this.#db = db;
    this.#onQueued = onQueued;
    this.#lease = lease ?? (() => undefined);
  }

  async write(write: EventWrite): Promise<CallbackWritten> {
    const outcome = await this.#batches.add(write);
    if ('failed' in outcome) throw outcome.failed;
    return outcome.written;
  }

  /** Resolves when every event handed over so far is written (or has failed): for an orderly stop. */
  flushed(): Promise<void> {
    return this.#batches.idle();
  }

  async #writeBatch(writes: readonly EventWrite[]): Promise<Outcome[]> {
    try {
      // Events without callbacks are one INSERT, atomic by itself: no transaction to open around it (on PostgreSQL
      // a BEGIN and a COMMIT are two more round trips, the connection held across all three).
      const lone = writes.every((w) => !w.callback && !w.alsoTo);
      // Routes' health before the transaction, from the read cache of the root instance (SQLite has one
      // connection: a read on it cannot wait inside the transaction).
      const disabled = lone ? undefined : await disabledRoutes(this.#db, writes);
      const written = lone
        ? await writeAll(this.#db, writes, undefined)
        : await inTransaction(this.#db, (tx) => writeAll(tx, writes, disabled, this.#lease));
      return this.#settle(written);
    } catch (err) {
      if (writes.length === 1) return [{ failed: err }];
    }
    const outcomes: Outcome[] = [];
    for (const w of writes) {
      try {
        const disabled = w.callback || w.alsoTo ? await disabledRoutes(this.#db, [w]) : undefined;
        outcomes.push(...this.#settle(await inTransaction(this.#db, (tx) => writeAll(tx, [w], disabled, this.#lease))));
      } catch (err) {
        outcomes.push({ failed: err });
      }
    }
    return outcomes;
  }

  #settle(written: Written): Outcome[] {
    // Stored already: a failing listener must not make the batch look unwritten (it would be written again).
    try {
      for (const { row, sid } of written.queued) this.#onQueued?.(row, sid);
    } catch {
      // The rows stay pending in the table; the outbox's poll finds them.
    }
    return written.results.map((r) => ({ written: r }));
  }
}

interface Written {
  results: CallbackWritten[];
  /** The status callbacks queued as pending, in order, with their events' sid. */
  queued: Array<{ row: NewOutboxRow; sid: string | undefined }>;
}

const routeKey = (accountId: string, route: string, url: string): string => `${accountId}\n${route}\n${url}`;

/** Which of the writes' status routes are auto-disabled, by routeKey. */
async function disabledRoutes(db: Db, writes: readonly EventWrite[]): Promise<Map<string, boolean>> {
  const disabled = new Map<string, boolean>();
  for (const { event, callback, alsoTo } of writes) {
    for (const c of [callback, alsoTo]) {
      if (!c) continue;
      const key = routeKey(event.account_id, c.route, c.url);
      if (disabled.has(key)) continue;
      const health = await findWebhookRouteCached(db, event.account_id, { route: c.route, url: c.url });
      disabled.set(key, Boolean(health?.disabled));
    }
  }
  return disabled;
}

/** Writes the events and their callbacks in `tx`. */
async function writeAll(
  tx: Tx | Db,
  writes: readonly EventWrite[],
  disabledByRoute: ReadonlyMap<string, boolean> | undefined,
  queueLease: QueueLease = () => undefined,
): Promise<Written> {
  await insertCallEvents(
    tx,
    writes.map((w) => w.event),
  );
  const outbox: NewOutboxRow[] = [];
  const queued: Written['queued'] = [];
  const results: CallbackWritten[] = [];
  const add = (
    event: NewCallEvent,
    c: { id: string; route: string; url: string; body: string; sid?: string },
    callId: string | null,
  ): CallbackWritten => {
    const disabled = disabledByRoute?.get(routeKey(event.account_id, c.route, c.url)) === true;
    const lease = disabled ? undefined : queueLease();
    const row: NewOutboxRow = {
      id: c.id,
      account_id: event.account_id,
      call_id: callId,
      event: event.event,
      route: c.route,
      url: c.url,
      body: c.body,
      attempts: 0,
      // An auto-disabled route is not sent to; the row records that the event existed and why it was not
      // delivered (re-enabling is an operator action, spec: States and transitions).
      state: disabled ? 'failed' : 'pending',
      last_error: disabled ? 'route_disabled' : null,
      next_attempt_at: lease?.until ?? event.created_at,
      leased_by: lease?.node ?? null,
      created_at: event.created_at,
      done_at: disabled ? event.created_at : null,
    };
    outbox.push(row);
    if (!disabled) queued.push({ row, sid: c.sid });
    return disabled ? 'route_disabled' : 'queued';
  };
  for (const { event, callback, alsoTo } of writes) {
    results.push(callback ? add(event, { id: event.id, ...callback }, event.call_id) : 'none');
    if (alsoTo) add(event, alsoTo, null);
  }
  if (outbox.length > 0) await insertOutboxRows(tx, outbox);
  return { results, queued };
}
