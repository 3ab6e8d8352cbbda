import {
  disableWebhookRoute,
  dueOutboxRows,
  findAccountSettings,
  findWebhookRouteCached,
  inTransaction,
  leaseOutboxRows,
  markOutboxRowsDelivered,
  outboxRowsNotSendable,
  releaseOutboxLeases,
  noteRouteDelivered,
  resetRouteFailures,
  noteRouteFailed,
  purgeFinishedOutboxRows,
  updateOutboxRow,
  type Db,
  type DueOutboxRow,
} from '../store/index.js';
import { UrlPolicy, systemClock, TurnBatch, type Clock } from '../kit/index.js';
import { randomUUID } from 'node:crypto';
import { roomLogger, type Logger } from '../config/index.js';
import { EventCodes } from './catalogue.js';
import { postStatusCallback } from './status-post.js';
import type { EventPublisher } from './publisher.js';

/**
 * Retry schedule of status callbacks (the spec leaves it to us: "Retry schedule ... not shown"). Five attempts:
 * at once, then 1 s, 5 s, 30 s and 120 s after the previous failure. Each entry is the wait before the next
 * attempt, so the number of attempts is `length + 1`.
 */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1_000, 5_000, 30_000, 120_000];
/** A receiver has this long to answer one attempt (the spec's call-control deadline, reused). */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
/** Spec, Limits: "Auto-disable threshold: 5 consecutive failed deliveries". */
export const AUTO_DISABLE_THRESHOLD = 5;
/**
 * Delivery attempts in flight at once, and of one account: a tenant whose status URL hangs holds at most a quarter
 * of the shared slots for an attempt's 10 s, so other tenants' callbacks keep their latency. An account's throughput
 * is its share over its receiver's round trip, so the share is large enough for a busy carrier account's callbacks
 * (about 13 a call) to keep up.
 */
export const DEFAULT_MAX_IN_FLIGHT = 64;
/** One account's share of the slots: a quarter (and at least 2). */
const ACCOUNT_SHARE = 4;
export const DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT = DEFAULT_MAX_IN_FLIGHT / ACCOUNT_SHARE;
export interface StatusCallbackOutboxOptions {
  db: Db;
  /** Records and streams WH.0200 / WH.0400, and kicks this outbox when it enqueues. */
  publisher: EventPublisher;
  retryDelaysMs?: readonly number[];
  attemptTimeoutMs?: number;
  /** How often the table is polled for due rows besides the kicks (retries come due by time). */
  pollIntervalMs?: number;
  /** Attempts in flight at once (different calls; one call's events are always one at a time); default 64. */
  maxInFlight?: number;
  /** Attempts of one account in flight at once; default a quarter of maxInFlight (16), at least 2. */
  maxInFlightPerAccount?: number;
  /**
   * Where status URLs may point (SSRF): every attempt resolves the host and refuses loopback, private,
   * link-local... addresses per this policy. Default: public destinations only. The composition root passes the
   * operator's (`webhooks.allowPrivate`).
   */
  urlPolicy?: UrlPolicy;
  autoDisableThreshold?: number;
  /**
   * The node this process is (`SIMU_NODE_ID`): its leases carry it, and the outbox ends them when it starts, so the
   * rows an earlier process of the node held are sent at once. One process at a time per node id. Default: an id of
   * this outbox's own (its leases then run out by time after a restart).
   */
  nodeId?: string;
  clock?: Pick<Clock, 'now'>;
  logger?: Logger;
}

/**
 * A row as the outbox holds it: read from the table, or handed over with its event's sid (no body to parse) and,
 * when it was queued leased to this process, the lease's end (epoch ms) until its first attempt.
 */
type OutboxRow = DueOutboxRow & { sid?: string; leasedUntil?: number };

/**
 * Calls whose order this process has checked and keeps (their later rows, queued by this process, are sent without a
 * check), at most: past it, the oldest are checked again.
 */
const MAX_CALLS_IN_ORDER = 20_000;

/** A lease lasts an attempt's timeout and this much more, for recording the attempt. */
const LEASE_SLACK_MS = 5_000;
/**
 * A row queued leased to this process may wait this long for its turn (its call's earlier rows, a free slot) and
 * still be sent under that lease; later, it is leased again first.
 */
const QUEUED_LEASE_WAIT_MS = 5_000;

/**
 * Leases and delivered marks go to the store at most every 5 ms each: under a stream of callbacks each finishing in a
 * turn of its own, one statement then covers the callbacks of those 5 ms; an idle outbox writes in the next turn.
 */
const BATCHING = { minGapMs: 5 };

type AttemptOutcome = { ok: true; status: number } | { ok: false; error: string };

/** How an attempt ended for the row: final (delivered or failed), or to be tried again at `at` (epoch ms). */
type Recorded = { final: true } | { final: false; at: number };

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Rows this process queued and keeps in memory at most (about a kilobyte each): past it, new rows are left to the
 * poll, which reads them from the table.
 */
const MAX_ROWS_IN_MEMORY = 10_000;

/**
 * Delivers status callbacks from the durable `event_outbox` table (spec: Events, "Delivery of status callbacks").
 *
 * - At least once: a row is claimed by moving its `next_attempt_at` past the attempt's deadline (a lease, naming the
 *   node), so a crash mid-attempt leaves it to be retried, by another node once the lease ends, or by the same node
 *   at once when it starts again (it ends its earlier process's leases first). The body bytes and the `id` in them
 *   are those stored at enqueue time, identical on every retry.
 * - Exactly one sender: a row this process will keep in memory is queued already leased to it (`leaseForQueued`),
 *   for long enough to wait its turn a few seconds and be attempted; it is sent without a lease statement while
 *   that lease still covers the attempt (and the read below finds it still this node's), and leased again first
 *   when it does not. Nobody else takes a leased row. A node declared gone (store/nodes.ts) has its leases ended,
 *   its rows due at once for the others; should it resume, what it kept under those leases goes through the lease.
 * - In order per call: a row is not attempted while an earlier row of the same call (smaller event id: ids are
 *   UUIDv7, see event-id.ts) is still pending, even while that one waits out a back-off. The lease checks it,
 *   whichever process queued the earlier row; a row queued leased is checked by a read, only for the first row of a
 *   call this process sends (its later rows are behind this process's own, sent or given up on first). A call this
 *   process stops holding (a lease lost, a row left to the poll) is checked again.
 * - Where rows come from: the publisher of this process hands over each row it queued once stored (`offer`), and
 *   the outbox keeps them in memory per call, oldest first, attempting each call's next row as soon as the one
 *   before it is done and waiting out a back-off with a timer: a status callback reads nothing of the table but
 *   its call's order, once. The table is polled (every `pollIntervalMs`) for every other pending row: those left
 *   by an earlier process or a node that stopped, and rows this one did not keep (memory full, or a call whose
 *   lease was lost to another node, which is then left to the poll altogether, its rows' leases ended).
 * - Any 2xx is success; anything else (3xx included: redirects are not followed, a moved endpoint must be fixed in
 *   the configuration, not silently followed with a signature made for the old URL), a timeout or a network error
 *   is a failed attempt.
 * - The account's current signing secret is read at each attempt, so a rotation applies to the next attempt.
 * - Success emits WH.0200 on the stream (never itself a status callback: see publisher.ts) and resets the route's
 *   failure counter. Its record is the delivered row (with the reply's status), listed among the call's events from
 *   there (store/call-events.ts): a delivery stores no event of its own. Exhausted retries emit WH.0400 and count
 *   one failure against the route; at `autoDisableThreshold` consecutive ones the route is disabled and a WH.0400
 *   with `routeDisabled: true` tells the account. Only the operator re-enables a route; a success elsewhere does
 *   not. A route is the one the row was queued for (its `route` and URL, store/webhook-routes.ts RouteRef): the
 *   account's status route and a number's status override count apart even when set to the same URL (spec,
 *   States: "per purpose").
 */
export class StatusCallbackOutbox {
  readonly #db: Db;
  readonly #publisher: EventPublisher;
  readonly #delays: readonly number[];
  readonly #attemptTimeoutMs: number;
  readonly #pollIntervalMs: number;
  readonly #maxInFlight: number;
  readonly #maxPerAccount: number;
  readonly #policy: UrlPolicy;
  readonly #threshold: number;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #log: Logger;
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Attempts in flight per account id. */
  readonly #accountLoad = new Map<string, number>();
  /** Rows kept in memory, per call (a row without a call is a queue of its own), oldest first. */
  readonly #queues = new Map<string, OutboxRow[]>();
  /** Queues whose first row is being attempted. */
  readonly #busy = new Set<string>();
  /**
   * Queues whose first row is not being attempted, by account: the only ones a pass looks at, and only of accounts
   * below their share of the slots (a pass runs each turn something is queued or finished; walking every queue,
   * those in flight and those of an account at its share included, cost more than the rest of the pass).
   */
  readonly #idle = new Map<string, Set<string>>();
  /** When a kept row waiting out a back-off is due again (epoch ms), by row id. */
  readonly #retryAt = new Map<string, number>();
  /** Ids kept in memory or in flight: the poll leaves them alone. */
  readonly #known = new Set<string>();
  /**
   * Calls of which this process holds every pending row: a row of theirs queued by this process and leased to it is
   * sent without checking the order (its call's earlier rows were this process's, sent or given up on first).
   */
  readonly #inOrder = new Set<string>();
  #wakeTimer: NodeJS.Timeout | undefined;
  #wakeAt = Infinity;
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;
  #again = false;
  /** A pass over the memory is due at the end of this turn (kick). */
  #kicked = false;
  #started = false;
  #closed = false;
  /** The node's leases of an earlier process are ended (the first poll does it); until then rows are queued due. */
  #leasesReleased = false;
  readonly #nodeId: string;
  /**
   * Leases and delivered marks of the attempts started or finished within one turn go to the store together: one
   * statement for all, not one per status callback. A row's next attempt is leased only once its call's earlier row
   * is marked (its attempt waits for the mark), so the lease's order check sees it done.
   */
  readonly #leases = new TurnBatch<string, number | undefined>(async (ids) => {
    const now = this.#clock.now();
    const until = iso(now + this.#attemptTimeoutMs + LEASE_SLACK_MS);
    const won = await leaseOutboxRows(this.#db, ids, until, iso(now), this.#nodeId);
    return ids.map((id) => won.get(id));
  }, BATCHING);
  /**
   * Rows queued leased to this process check only the order of their call and that the lease is still theirs,
   * together: true when sendable.
   */
  readonly #orderChecks = new TurnBatch<string, boolean>(async (ids) => {
    const behind = await outboxRowsNotSendable(this.#db, ids, this.#nodeId);
    return ids.map((id) => !behind.has(id));
  }, BATCHING);
  readonly #delivered = new TurnBatch<{ id: string; attempts: number; status: number }, void>(async (rows) => {
    await markOutboxRowsDelivered(this.#db, rows, iso(this.#clock.now()));
    return rows.map(() => undefined);
  }, BATCHING);

  constructor(opts: StatusCallbackOutboxOptions) {
    this.#db = opts.db;
    this.#publisher = opts.publisher;
    this.#delays = opts.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.#attemptTimeoutMs = opts.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
    this.#pollIntervalMs = opts.pollIntervalMs ?? 250;
    this.#maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.#maxPerAccount = opts.maxInFlightPerAccount ?? Math.max(2, Math.floor(this.#maxInFlight / ACCOUNT_SHARE));
    // Redirects are never followed here (see the class comment): the guarded request checks the one hop.
    this.#policy = opts.urlPolicy ?? UrlPolicy.strict;
    this.#threshold = opts.autoDisableThreshold ?? AUTO_DISABLE_THRESHOLD;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger ?? roomLogger('events').child({ part: 'outbox' });
    this.#nodeId = opts.nodeId ?? `outbox-${randomUUID()}`;
  }

  get maxAttempts(): number {
    return this.#delays.length + 1;
  }

  /** Starts polling; rows left pending by an earlier process are picked up at once. Safe to call twice. */
  start(): this {
    if (this.#started || this.#closed) return this;
    this.#started = true;
    this.#publisher.attachOutbox(this);
    this.#schedulePoll(0);
    return this;
  }

  /**
   * A row this process queued, stored and pending: kept in memory and attempted as soon as its call's earlier rows
   * are done (the publisher calls this). Not kept when memory is full or the row is known already: the poll then
   * finds it in the table.
   */
  offer(queued: DueOutboxRow & { leased_by?: string | null }, sid?: string): void {
    if (!this.#started || this.#closed || this.#known.has(queued.id)) return;
    // A row queued leased to this process is kept whatever the memory holds (leaseForQueued let it in).
    const leased = queued.leased_by === this.#nodeId;
    if (!leased && this.#known.size >= MAX_ROWS_IN_MEMORY) {
      // Left to the poll: the call's later rows are no longer sure to be behind only this process's own.
      if (queued.call_id !== null) this.#inOrder.delete(queued.call_id);
      return;
    }
    // What the delivery reads, without the stored row's other columns.
    const { id, account_id, call_id, event, route, url, body, attempts, next_attempt_at } = queued;
    const row: OutboxRow = { id, account_id, call_id, event, route, url, body, attempts, next_attempt_at, sid };
    if (leased) row.leasedUntil = Date.parse(next_attempt_at);
    const key = row.call_id ?? row.id;
    const queue = this.#queues.get(key);
    if (queue === undefined) this.#queues.set(key, [row]);
    else {
      // In id order (the order the lease checks); events of one call are almost always offered in that order.
      let i = queue.length;
      while (i > 0 && queue[i - 1]!.id > row.id) i--;
      queue.splice(i, 0, row);
    }
    this.#known.add(row.id);
    if (!this.#busy.has(key)) this.#markIdle(row.account_id, key);
    this.kick();
  }

  /**
   * The lease a status callback about to be queued is written with, when this outbox will keep it in memory: it is
   * sent without a lease statement of its own, its call's order checked by a read (the publisher calls this).
   * Undefined while memory is full or before the node's earlier leases are ended: the row is queued due.
   */
  leaseForQueued(): { node: string; until: string } | undefined {
    if (!this.#started || this.#closed || !this.#leasesReleased || this.#known.size >= MAX_ROWS_IN_MEMORY) {
      return undefined;
    }
    const until = this.#clock.now() + QUEUED_LEASE_WAIT_MS + this.#attemptTimeoutMs + LEASE_SLACK_MS;
    return { node: this.#nodeId, until: iso(until) };
  }

  /** New work: a pass over the rows in memory at the end of this turn. */
  kick(): void {
    if (!this.#started || this.#closed || this.#kicked) return;
    // Once per turn of the event loop: every new row and every finished attempt kicks.
    this.#kicked = true;
    setImmediate(() => {
      this.#kicked = false;
      this.#pump();
    });
  }

  /** Stops polling and waits for attempts in flight (each bounded by the attempt timeout). Safe to call twice. */
  /**
   * Resolves once this process has no status callback queued or in flight, or after `timeoutMs`: a draining switch
   * delivers its calls' last callbacks before it stops (what is left stays pending in the table).
   */
  async settled(timeoutMs: number, pollMs = 50): Promise<boolean> {
    const deadline = this.#clock.now() + timeoutMs;
    while (this.#queues.size > 0 || this.#inFlight.size > 0) {
      if (this.#closed || this.#clock.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, pollMs));
    }
    return true;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#publisher.attachOutbox(undefined);
    clearTimeout(this.#timer);
    clearTimeout(this.#wakeTimer);
    // Rows kept in memory stay pending in the table, for the next process; those queued leased to this one and not
    // attempted yet are due at once, for another node.
    const leased = [...this.#queues.values()]
      .flat()
      .filter((r) => r.leasedUntil !== undefined && !this.#inFlight.has(r.id));
    this.#queues.clear();
    this.#idle.clear();
    this.#retryAt.clear();
    await this.#releaseLeases(leased.map((r) => r.id));
    await Promise.allSettled([...this.#inFlight.values()]);
  }

  /**
   * Housekeeping: deletes rows that reached a final state (delivered or failed) before `before`. Pending rows are
   * never touched. Returns how many were removed. The switch's hourly sweep does the same (store/housekeeping.ts).
   */
  async purge(before: Date): Promise<number> {
    return purgeFinishedOutboxRows(this.#db, before.toISOString());
  }

  #schedulePoll(ms: number): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      void this.#tick().finally(() => this.#schedulePoll(this.#pollIntervalMs));
    }, ms);
  }

  async #tick(): Promise<void> {
    if (this.#closed) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = true;
    try {
      do {
        this.#again = false;
        await this.#claimDue();
      } while (this.#again && !this.#closed);
    } catch (err) {
      this.#log.error({ err }, 'outbox poll failed');
    } finally {
      this.#ticking = false;
    }
  }

  /** Starts the first row of each call kept in memory that is free, due and within the slots. */
  #pump(): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    let nextRetry = Infinity;
    const served: string[] = [];
    for (const [account, keys] of this.#idle) {
      if (this.#inFlight.size >= this.#maxInFlight) break;
      for (const key of keys) {
        if (this.#inFlight.size >= this.#maxInFlight) break;
        if ((this.#accountLoad.get(account) ?? 0) >= this.#maxPerAccount) break;
        const queue = this.#queues.get(key);
        if (queue === undefined) {
          keys.delete(key);
          continue;
        }
        const row = queue[0]!;
        const due = this.#retryAt.get(row.id);
        if (due !== undefined && due > now) {
          nextRetry = Math.min(nextRetry, due);
          continue;
        }
        keys.delete(key);
        this.#busy.add(key);
        this.#start(row, key);
        if (served[served.length - 1] !== account) served.push(account);
      }
      if (keys.size === 0) this.#idle.delete(account);
    }
    // Accounts served go last: the next slot freed goes to another account's waiting call first.
    for (const account of served) {
      const keys = this.#idle.get(account);
      if (keys === undefined) continue;
      this.#idle.delete(account);
      this.#idle.set(account, keys);
    }
    if (nextRetry < Infinity) this.#wake(nextRetry);
  }

  /** A queue of the account whose first row is not being attempted: the next pass looks at it. */
  #markIdle(account: string, key: string): void {
    const keys = this.#idle.get(account);
    if (keys === undefined) this.#idle.set(account, new Set([key]));
    else keys.add(key);
  }

  /** A pass over the memory at `at` (the earliest back-off to end), unless one is due sooner. */
  #wake(at: number): void {
    if (this.#closed || (this.#wakeTimer !== undefined && this.#wakeAt <= at)) return;
    clearTimeout(this.#wakeTimer);
    this.#wakeAt = at;
    this.#wakeTimer = setTimeout(
      () => {
        this.#wakeTimer = undefined;
        this.#wakeAt = Infinity;
        this.kick();
      },
      Math.max(0, at - this.#clock.now()),
    );
  }

  /** Pending rows from the table that this process does not hold: left by another process, or not kept. */
  async #claimDue(): Promise<void> {
    if (!this.#leasesReleased) {
      // Before any row is queued leased to this process: every lease of the node is an earlier process's.
      const n = await releaseOutboxLeases(this.#db, this.#nodeId, iso(this.#clock.now()));
      if (n > 0) this.#log.info({ rows: n, node: this.#nodeId }, "outbox: an earlier process's leases ended");
      this.#leasesReleased = true;
    }
    const room = this.#maxInFlight - this.#inFlight.size;
    if (room <= 0) return;
    const now = this.#clock.now();
    // Accounts at their cap are left out of the query, so one tenant's backlog cannot fill the batch either.
    const full = [...this.#accountLoad].filter(([, n]) => n >= this.#maxPerAccount).map(([id]) => id);
    // Room for skipping rows of accounts that reach their cap within this batch (and rows held in memory).
    const rows = await dueOutboxRows(this.#db, iso(now), full, (room + this.#inFlight.size) * this.#maxPerAccount);
    for (const row of rows) {
      if (this.#inFlight.size >= this.#maxInFlight || this.#closed) break;
      if (this.#known.has(row.id)) continue;
      if ((this.#accountLoad.get(row.account_id) ?? 0) >= this.#maxPerAccount) continue;
      this.#start(row, undefined);
    }
    this.#pump();
  }

  /**
   * One attempt of a row: the lease, the request, its record. `queue` is the memory queue the row heads (undefined
   * for a row read by the poll, which is forgotten after the attempt whatever happened).
   */
  #start(row: OutboxRow, queue: string | undefined): void {
    this.#accountLoad.set(row.account_id, (this.#accountLoad.get(row.account_id) ?? 0) + 1);
    this.#known.add(row.id);
    const p = this.#leaseAndAttempt(row, queue)
      .catch((err) => {
        this.#log.error({ err, eventId: row.id }, 'recording a delivery attempt failed');
        // Its lease runs out and the poll takes the row (and the rest of its call) from the table.
        if (queue !== undefined) this.#forgetQueue(queue);
      })
      .finally(() => {
        this.#inFlight.delete(row.id);
        if (queue !== undefined) {
          this.#busy.delete(queue);
          if (this.#queues.has(queue)) this.#markIdle(row.account_id, queue);
        }
        if (queue === undefined || !this.#queues.has(queue) || this.#queues.get(queue)![0] !== row) {
          this.#known.delete(row.id);
        }
        const left = (this.#accountLoad.get(row.account_id) ?? 1) - 1;
        if (left > 0) this.#accountLoad.set(row.account_id, left);
        else this.#accountLoad.delete(row.account_id);
        this.kick();
      });
    this.#inFlight.set(row.id, p);
  }

  async #leaseAndAttempt(row: OutboxRow, queue: string | undefined): Promise<void> {
    const leasedUntil = row.leasedUntil;
    row.leasedUntil = undefined;
    // The lease: only the process whose conditional update wins attempts the row. A row queued leased to this
    // process whose lease still covers the attempt needs only its call's order checked.
    const covered =
      leasedUntil !== undefined && this.#clock.now() + this.#attemptTimeoutMs + LEASE_SLACK_MS <= leasedUntil;
    let attempted: number | undefined;
    if (!covered) attempted = await this.#leases.add(row.id);
    else if ((row.call_id !== null && this.#inOrder.has(row.call_id)) || (await this.#orderChecks.add(row.id))) {
      attempted = row.attempts;
    }
    if (attempted !== undefined && queue !== undefined && row.call_id !== null) this.#keepInOrder(row.call_id);
    if (attempted === undefined) {
      // Another node took it, or an earlier row of its call is pending elsewhere: the poll handles this call now.
      if (queue !== undefined) this.#forgetQueue(queue, covered ? row : undefined);
      return;
    }
    // Attempts made by whoever held the row before (another node's retries) count too.
    row.attempts = attempted;
    const recorded = await this.#attemptAndRecord(row);
    if (queue === undefined) return;
    const rows = this.#queues.get(queue);
    if (rows?.[0] !== row) return;
    if (recorded.final) {
      rows.shift();
      this.#retryAt.delete(row.id);
      if (rows.length === 0) this.#queues.delete(queue);
      return;
    }
    // Kept at the head of its call, due again after the back-off (the lease compares next_attempt_at).
    row.attempts += 1;
    row.next_attempt_at = iso(recorded.at);
    this.#retryAt.set(row.id, recorded.at);
    this.#wake(recorded.at);
  }

  /** Marks a call as one whose pending rows are all this process's (#inOrder), the oldest forgotten past the cap. */
  #keepInOrder(callId: string): void {
    if (this.#inOrder.has(callId)) return;
    if (this.#inOrder.size >= MAX_CALLS_IN_ORDER) this.#inOrder.delete(this.#inOrder.values().next().value!);
    this.#inOrder.add(callId);
  }

  /**
   * Drops a call's rows from memory; they stay pending in the table for the poll, those queued leased to this process
   * and not attempted due at once.
   */
  #forgetQueue(key: string, releaseHead?: OutboxRow): void {
    this.#inOrder.delete(key);
    const leased: string[] = [];
    const account = this.#queues.get(key)?.[0]?.account_id;
    if (account !== undefined) this.#idle.get(account)?.delete(key);
    for (const r of this.#queues.get(key) ?? []) {
      this.#retryAt.delete(r.id);
      if (!this.#inFlight.has(r.id)) this.#known.delete(r.id);
      if (r.leasedUntil !== undefined || r === releaseHead) leased.push(r.id);
    }
    this.#queues.delete(key);
    void this.#releaseLeases(leased);
  }

  /** Ends this node's leases on the given rows (those it will not attempt). */
  async #releaseLeases(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await releaseOutboxLeases(this.#db, this.#nodeId, iso(this.#clock.now()), ids);
    } catch (err) {
      // Their leases run out by time.
      this.#log.warn({ err, rows: ids.length }, 'outbox: could not end leases');
    }
  }

  async #attemptAndRecord(row: OutboxRow): Promise<Recorded> {
    // The signing secret and the route's health from the read cache (a rotation, a failure counted or an operator's
    // re-enable in this process invalidates it): reading them was a quarter of a status callback's cost.
    const account = await findAccountSettings(this.#db, row.account_id);
    const ref = { route: row.route, url: row.url };
    const health = await findWebhookRouteCached(this.#db, row.account_id, ref);
    if (!account || health?.disabled) {
      // Disabled after this row was queued (or the account is gone): not sent, recorded why.
      await updateOutboxRow(this.#db, row.id, {
        state: 'failed',
        last_error: account ? 'route_disabled' : 'account_missing',
        done_at: iso(this.#clock.now()),
      });
      return { final: true };
    }
    const outcome = await this.#post(row, String(account.signing_secret));
    const attempts = row.attempts + 1;
    const now = this.#clock.now();
    if (outcome.ok) {
      if (health !== undefined) {
        // The route's row exists: a failure count to reset is written (rare), none is the usual case. No
        // transaction with the delivered mark (a crash between them leaves a count the next delivery resets).
        await this.#delivered.add({ id: row.id, attempts, status: outcome.status });
        if (health.consecutive_failures > 0) await resetRouteFailures(this.#db, row.account_id, ref, iso(now));
      } else {
        const delivered = {
          state: 'delivered' as const,
          attempts,
          reply_status: outcome.status,
          last_error: null,
          done_at: iso(now),
        };
        await inTransaction(this.#db, async (trx) => {
          await updateOutboxRow(trx, row.id, delivered);
          await noteRouteDelivered(trx, row.account_id, ref, iso(now));
        });
      }
      this.#announceDelivered(row, { attempts, status: outcome.status });
      return { final: true };
    }
    if (attempts < this.maxAttempts) {
      const wait = this.#delays[attempts - 1]!;
      await updateOutboxRow(this.#db, row.id, {
        attempts,
        last_error: outcome.error,
        next_attempt_at: iso(now + wait),
      });
      this.#log.debug({ eventId: row.id, attempts, error: outcome.error, retryInMs: wait }, 'status callback retry');
      return { final: false, at: now + wait };
    }
    let disabledNow = false;
    let failures = 0;
    await inTransaction(this.#db, async (trx) => {
      await updateOutboxRow(trx, row.id, { state: 'failed', attempts, last_error: outcome.error, done_at: iso(now) });
      const r = await noteRouteFailed(trx, row.account_id, ref, iso(now));
      failures = r.consecutive_failures;
      if (failures >= this.#threshold && !r.disabled) {
        await disableWebhookRoute(trx, row.account_id, ref, iso(now));
        disabledNow = true;
      }
    });
    this.#log.warn({ eventId: row.id, url: row.url, attempts, error: outcome.error }, 'status callback failed');
    await this.#notify(row, EventCodes.webhookFailed, { attempts, lastError: outcome.error });
    if (disabledNow) {
      this.#log.warn(
        { accountId: row.account_id, route: row.route, url: row.url, failures },
        'status route auto-disabled',
      );
      await this.#notify(row, EventCodes.webhookFailed, {
        routeDisabled: true,
        consecutiveFailures: failures,
      });
    }
    return { final: true };
  }

  async #post(row: OutboxRow, secret: string): Promise<AttemptOutcome> {
    const outcome = await postStatusCallback(
      { url: row.url, body: row.body, event: row.event, secret },
      { policy: this.#policy, timeoutMs: this.#attemptTimeoutMs, now: this.#clock.now() },
    );
    if (!outcome.ok && outcome.detail !== undefined) {
      this.#log.debug({ eventId: row.id, code: outcome.error, detail: outcome.detail }, 'status callback not sent');
    }
    return outcome;
  }

  /** WH.0200 about one delivery, on the stream only: the delivered row is its record. */
  #announceDelivered(row: OutboxRow, extra: { attempts: number; status: number }): void {
    try {
      this.#publisher.publishUnstored({
        accountId: row.account_id,
        code: EventCodes.webhookDelivered,
        sid: this.#sidOf(row),
        data: { eventId: row.id, event: row.event, url: row.url, route: row.route, ...extra },
      });
    } catch (err) {
      this.#log.error({ err, eventId: row.id }, 'could not emit the delivery event');
    }
  }

  /** The call sid of a row's event: handed over with the row, or read from its body (a row the poll found). */
  #sidOf(row: OutboxRow): string | undefined {
    if (row.sid !== undefined) return row.sid;
    try {
      return (JSON.parse(row.body) as { sid?: string }).sid;
    } catch {
      return undefined;
    }
  }

  /** WH.0400 about one delivery, on the stream and in call_events; never a status callback. */
  async #notify(row: OutboxRow, code: typeof EventCodes.webhookFailed, extra: object) {
    try {
      await this.#publisher.emit({
        accountId: row.account_id,
        code,
        sid: this.#sidOf(row),
        customPayload: null,
        data: { eventId: row.id, event: row.event, url: row.url, route: row.route, ...extra },
      });
    } catch (err) {
      this.#log.error({ err, eventId: row.id }, 'could not emit the delivery event');
    }
  }
}
