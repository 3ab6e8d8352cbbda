import {
  findWebhookRoute,
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
  callback?: { route: string; url: string; body: string };
}

/** How an event's status callback was queued: `route_disabled` rows are recorded as failed and never sent. */
export type CallbackWritten = 'queued' | 'route_disabled' | 'none';

interface Pending {
  write: EventWrite;
  resolve: (r: CallbackWritten) => void;
  reject: (err: unknown) => void;
}

/** Events in one transaction at most; a burst larger than this is written in several, in order. */
const MAX_BATCH = 500;

/**
 * Group commit of events: the events emitted while a write is in progress (or within one turn of the event loop)
 * are written together, in one transaction with one INSERT per table, instead of one transaction each. Every
 * caller still waits until its own event is durable, so nothing is published or sent before it is stored; order is
 * kept (a batch is written in the order of `write` calls, batches one after another). When a batch fails, its
 * events are written again one by one, so one bad event fails alone and the others are not lost.
 */
export class EventWriter {
  readonly #db: Db;
  #queue: Pending[] = [];
  #running: Promise<void> | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  write(write: EventWrite): Promise<CallbackWritten> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ write, resolve, reject });
      this.#running ??= new Promise<void>((done) => setImmediate(done)).then(() => this.#drain());
    });
  }

  /** Resolves when every event handed over so far is written (or has failed): for an orderly stop. */
  async flushed(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        await this.#writeBatch(batch);
      }
    } finally {
      this.#running = undefined;
    }
  }

  async #writeBatch(batch: Pending[]): Promise<void> {
    try {
      // Events without callbacks are one INSERT, atomic by itself: no transaction to open around it (on PostgreSQL
      // a BEGIN and a COMMIT are two more round trips, the connection held across all three).
      const lone = batch.every((p) => !p.write.callback);
      const writes = batch.map((p) => p.write);
      const results = lone
        ? await writeAll(this.#db, writes)
        : await inTransaction(this.#db, (tx) => writeAll(tx, writes));
      batch.forEach((p, i) => p.resolve(results[i]!));
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
    }
    for (const p of batch) {
      try {
        const [r] = await inTransaction(this.#db, (tx) => writeAll(tx, [p.write]));
        p.resolve(r!);
      } catch (err) {
        p.reject(err);
      }
    }
  }
}

/** Writes the events and their callbacks in `tx`; a route's health is read once per batch. */
async function writeAll(tx: Tx | Db, writes: readonly EventWrite[]): Promise<CallbackWritten[]> {
  await insertCallEvents(
    tx,
    writes.map((w) => w.event),
  );
  const disabledByRoute = new Map<string, boolean>();
  const outbox: NewOutboxRow[] = [];
  const results: CallbackWritten[] = [];
  for (const { event, callback } of writes) {
    if (!callback) {
      results.push('none');
      continue;
    }
    const key = `${event.account_id}\n${callback.route}\n${callback.url}`;
    let disabled = disabledByRoute.get(key);
    if (disabled === undefined) {
      const health = await findWebhookRoute(tx, event.account_id, { route: callback.route, url: callback.url });
      disabled = Boolean(health?.disabled);
      disabledByRoute.set(key, disabled);
    }
    outbox.push({
      id: event.id,
      account_id: event.account_id,
      call_id: event.call_id,
      event: event.event,
      route: callback.route,
      url: callback.url,
      body: callback.body,
      attempts: 0,
      // An auto-disabled route is not sent to; the row records that the event existed and why it was not
      // delivered (re-enabling is an operator action, spec: States and transitions).
      state: disabled ? 'failed' : 'pending',
      last_error: disabled ? 'route_disabled' : null,
      next_attempt_at: event.created_at,
      created_at: event.created_at,
      done_at: disabled ? event.created_at : null,
    });
    results.push(disabled ? 'route_disabled' : 'queued');
  }
  if (outbox.length > 0) await insertOutboxRows(tx, outbox);
  return results;
}
