import {
  findAccountSettings,
  findCallAnyAccount,
  findNumberOfCached,
  ACCOUNT_STATUS_ROUTE,
  numberStatusRoute,
  type Db,
  type DueOutboxRow,
} from '../store/index.js';
import { roomLogger, type Logger } from '../config/index.js';
import { requestUrl, systemClock, type Clock } from '../kit/index.js';
import { EventCodes, TERMINAL_CALL_EVENTS, eventFor, isEventCode, type EventCode } from './catalogue.js';
import {
  buildStatusCallbackBody,
  buildStreamFrame,
  toCallSnapshot,
  type CallSnapshot,
  type StreamFrame,
} from './envelope.js';
import { EventBus } from './bus.js';
import { EventWriter } from './event-writer.js';
import { eventIds } from './event-id.js';
import { EventPersistError, InvalidEventError } from './errors.js';

export interface EmitInput {
  /** The owning account; null only for platform-wide events (SYS.0500 outside an account). */
  accountId: string | null;
  code: EventCode;
  /** The call's uuid: the status URL is resolved through its DID, its snapshot loaded when not given. */
  callId?: string;
  /** The call's sid; taken from the call row when omitted and `callId` is given. */
  sid?: string;
  /** The call's metadata (an object); taken from the call row when omitted and `callId` is given. */
  customPayload?: Record<string, unknown> | null;
  /** Code-specific fields of the stream frame. For CALL.0300/0400, reasonCode, duration and cost are filled in
   * from the call when missing. */
  data?: Record<string, unknown>;
  /** The call as it is now; loaded from the calls table by `callId` when omitted. */
  callSnapshot?: CallSnapshot | Record<string, unknown>;
  /** The call's stored row as its owner holds it (the result of its last write): used in place of reading the row
   * by `callId` for the snapshot, sid, metadata, terminal figures and the DID of the status URL. */
  callRow?: Record<string, unknown>;
  createdAt?: Date;
  /**
   * Besides the status callback, this exact body to the customer's `url` (the asynchronous AMD verdict), signed
   * and delivered by the outbox like a status callback, counted against `route`'s health (events/event-writer.ts).
   */
  alsoTo?: { route: string; url: string; body: string };
}

/** What happened to the status callback of an emitted event. */
export type DeliveryDisposition =
  | 'queued' // in the outbox, pending
  | 'route_disabled' // the status route is auto-disabled: recorded in the outbox as failed, not sent
  | 'no_route' // no status URL configured
  | 'not_delivered'; // this kind of event is never a status callback (WH.*, PLATFORM.0001, no account)

export interface EmittedEvent {
  id: string;
  frame: StreamFrame;
  delivery: DeliveryDisposition;
  url?: string;
  /** The status route it was queued for (`status`, or `status:number:<id>` for a number's override). */
  route?: string;
}

/**
 * The outbox as the publisher sees it: handed each status callback queued as pending, once it is stored, so it can
 * be attempted at once without reading the table for it.
 */
export interface OutboxFeed {
  offer(row: DueOutboxRow & { leased_by?: string | null }, sid?: string): void;
  /** A lease for a row about to be queued, when this outbox will keep it (events/event-writer.ts QueueLease). */
  leaseForQueued(): { node: string; until: string } | undefined;
}

/**
 * Codes never sent as status callbacks. WH.* report on deliveries themselves: sending them through the same
 * status route would loop (a failing route would generate a WH.0400 to deliver to the failing route, and a
 * WH.0200 would beget another WH.0200 for ever). They reach the stream and call_events only. PLATFORM.0001 is
 * staff-only and has no account. VERB.0299 (an ignored verb attribute) is a diagnostic for the developer of the
 * documents, not a call lifecycle event: stream and call_events only (docs/api.md).
 */
const NOT_A_STATUS_CALLBACK: ReadonlySet<EventCode> = new Set<EventCode>([
  EventCodes.webhookDelivered,
  EventCodes.webhookFailed,
  EventCodes.platformConcurrent,
  EventCodes.verbAttributeIgnored,
]);

export const isStatusCallbackCode = (code: EventCode): boolean => !NOT_A_STATUS_CALLBACK.has(code);

/** Cents → "12.34" (spec: money is a string with two decimals at the edge). */
const centsToString = (cents: number): string => {
  const sign = cents < 0 ? '-' : '';
  const a = Math.abs(Math.trunc(cents));
  return `${sign}${Math.floor(a / 100)}.${String(a % 100).padStart(2, '0')}`;
};

/**
 * The one way events enter the system (the calls, billing, verbs and API rooms call `emit`). For each event it:
 * records it in call_events; enqueues its status callback in the durable outbox, in the same transaction, when
 * the account has a status URL, and hands it to the outbox once stored; then publishes the stream frame on the bus.
 */
export class EventPublisher {
  readonly #db: Db;
  readonly #bus: EventBus;
  readonly #log: Logger;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #writer: EventWriter;
  #outbox: OutboxFeed | undefined;

  constructor(deps: { db: Db; bus: EventBus; logger?: Logger; clock?: Pick<Clock, 'now'> }) {
    this.#db = deps.db;
    this.#bus = deps.bus;
    this.#log = deps.logger ?? roomLogger('events');
    this.#clock = deps.clock ?? systemClock;
    this.#writer = new EventWriter(
      deps.db,
      (row, sid) => this.#outbox?.offer(row, sid),
      () => this.#outbox?.leaseForQueued(),
    );
  }

  /** Resolves when every event emitted so far is stored (the group commit has drained): for an orderly stop. */
  flushed(): Promise<void> {
    return this.#writer.flushed();
  }

  get bus(): EventBus {
    return this.#bus;
  }

  /** The outbox registers itself here so that a new callback is attempted at once rather than at the next poll. */
  attachOutbox(outbox: OutboxFeed | undefined): void {
    this.#outbox = outbox;
  }

  async emit(input: EmitInput): Promise<EmittedEvent> {
    if (!isEventCode(input.code)) throw new InvalidEventError(`unknown event code ${String(input.code)}`);
    if (input.code === EventCodes.platformConcurrent) {
      throw new InvalidEventError('PLATFORM.0001 is published with publishPlatformConcurrent');
    }
    const { event } = eventFor(input.code);
    const createdAt = (input.createdAt ?? new Date(this.#clock.now())).toISOString();
    const id = eventIds.next();

    let callRow: Record<string, any> | undefined = input.callRow;
    const needRow =
      callRow === undefined &&
      input.callId !== undefined &&
      (input.callSnapshot === undefined || input.sid === undefined || input.customPayload === undefined);
    try {
      if (needRow) callRow = await findCallAnyAccount(this.#db, input.callId!);
    } catch (err) {
      throw new EventPersistError(err);
    }
    const snapshot = input.callSnapshot
      ? toCallSnapshot(input.callSnapshot as Record<string, unknown>)
      : callRow
        ? toCallSnapshot(callRow)
        : null;
    const sid = input.sid ?? snapshot?.sid ?? undefined;
    const customPayload = input.customPayload !== undefined ? input.customPayload : parsePayload(callRow);

    let data = input.data ?? {};
    if (TERMINAL_CALL_EVENTS.has(input.code)) {
      // Spec, Events: on the stream call.completed and call.failed carry reasonCode, duration and cost.
      // The given snapshot's fields, else the row's (as if the snapshot were spread over the row), without a copy.
      const given = input.callSnapshot as Record<string, unknown> | undefined;
      const field = (k: string): unknown => (given !== undefined && Object.hasOwn(given, k) ? given[k] : callRow?.[k]);
      const duration = field('duration_seconds');
      const costCents = field('cost_cents');
      data = {
        reasonCode: field('reason_code') ?? null,
        duration: duration == null ? null : Number(duration),
        cost: costCents == null ? (field('cost') ?? null) : centsToString(Number(costCents)),
        ...data,
      };
    }
    const frame = buildStreamFrame({ code: input.code, event, sid, customPayload, createdAt, data });

    let delivery: DeliveryDisposition = 'not_delivered';
    let url: string | undefined;
    let route: string | undefined;
    if (input.accountId !== null) {
      const accountId = input.accountId;
      try {
        // Resolved before the write, from the store's read cache (the DID's and the account's settings): a call's
        // events do not read them again each time. The SQLite store has one connection, so a read on the root
        // instance must not wait inside the writer's transaction.
        const resolved = isStatusCallbackCode(input.code)
          ? await resolveStatusRoute(
              this.#db,
              accountId,
              callRow !== undefined ? (callRow.number_id ?? null) : await numberIdOf(this.#db, input),
            )
          : undefined;
        const row = {
          id,
          account_id: accountId,
          call_id: input.callId ?? null,
          code: input.code,
          event,
          data: JSON.stringify(frame.data ?? {}),
          created_at: createdAt,
        };
        const alsoTo = input.alsoTo
          ? {
              id: eventIds.next(),
              route: input.alsoTo.route,
              url: wireUrl(input.alsoTo.url),
              body: input.alsoTo.body,
              sid,
            }
          : undefined;
        if (resolved) {
          url = wireUrl(resolved.url);
          route = resolved.route;
          const body = buildStatusCallbackBody(frame, id, accountId, snapshot);
          const written = await this.#writer.write({ event: row, callback: { route, url, body, sid }, alsoTo });
          delivery = written === 'route_disabled' ? 'route_disabled' : 'queued';
        } else {
          await this.#writer.write({ event: row, alsoTo });
          if (isStatusCallbackCode(input.code)) delivery = 'no_route';
        }
      } catch (err) {
        throw new EventPersistError(err);
      }
    }

    this.#bus.publish({
      id,
      accountId: input.accountId,
      staffOnly: false,
      callId: input.callId,
      frame,
      call: snapshot ?? undefined,
    });
    if (this.#log.isLevelEnabled('debug'))
      this.#log.debug({ eventId: id, code: input.code, sid, delivery }, 'event emitted');
    return { id, frame, delivery, url, route };
  }

  /**
   * An account's event on the stream only, neither stored nor a status callback: a delivery's WH.0200, whose record
   * is the delivered outbox row (listed among the call's events from there, store/call-events.ts).
   */
  publishUnstored(input: {
    accountId: string;
    code: EventCode;
    sid?: string;
    data: Record<string, unknown>;
  }): StreamFrame {
    const createdAt = new Date(this.#clock.now()).toISOString();
    const { event } = eventFor(input.code);
    const frame = buildStreamFrame({
      code: input.code,
      event,
      sid: input.sid,
      customPayload: null,
      createdAt,
      data: input.data,
    });
    this.#bus.publish({ id: eventIds.next(), accountId: input.accountId, staffOnly: false, frame });
    return frame;
  }

  /**
   * PLATFORM.0001 for staff streams: the platform-wide count of active calls. Not recorded and never a status
   * callback (it belongs to no account). The calls room calls this on each change, or periodically.
   */
  publishPlatformConcurrent(activeCalls: number, at: Date = new Date(this.#clock.now())): StreamFrame {
    return this.#publishStaff(EventCodes.platformConcurrent, { activeCalls }, at);
  }

  /**
   * Overload control's state for staff streams: PLATFORM.0503 ("not admitting new calls") with what is being shed
   * and why, when shedding starts, when its limit moves and when it stops (`shedding: false`). Not stored: it
   * concerns no account and no call.
   */
  publishPlatformShedding(
    state: { shedding: boolean; limitCps: number | null; reason: string; refused: number },
    at: Date = new Date(this.#clock.now()),
  ): StreamFrame {
    return this.#publishStaff(EventCodes.platformDraining, { ...state, cause: 'overload' }, at);
  }

  /** A frame for staff streams only: no account, no call, not stored. */
  #publishStaff(code: EventCode, data: Record<string, unknown>, at: Date): StreamFrame {
    const frame = buildStreamFrame({ code, event: eventFor(code).event, createdAt: at.toISOString(), data });
    this.#bus.publish({ id: eventIds.next(), accountId: null, staffOnly: true, frame });
    return frame;
  }
}

/**
 * The URL in the form it goes on the wire (kit/request-url.ts: host lower-cased, default port, fragment and an
 * empty `?` dropped, spaces and non-ASCII percent-encoded, `/` for an empty path). It is what is stored, requested
 * and signed, so the receiver's reconstruction of the request URL matches the signed string. A URL that does not
 * parse is kept as given; its attempts fail and are reported like any other failure.
 */
export function wireUrl(url: string): string {
  return requestUrl(url);
}

function parsePayload(row: Record<string, any> | undefined): Record<string, unknown> | null {
  const raw = row?.custom_payload;
  if (raw == null || raw === '') return null;
  if (typeof raw === 'object') return raw as Record<string, unknown>;
  try {
    const v = JSON.parse(String(raw));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

async function numberIdOf(db: Db, input: EmitInput): Promise<string | null> {
  if (!input.callId) return null;
  const r = await findCallAnyAccount(db, input.callId);
  return r?.number_id ?? null;
}

/**
 * The status route (spec: "URL resolution order", per purpose): the call's DID's own `status` override (route
 * `status:number:<id>`), else the account's default `status` URL (route `status`); an empty string means "not
 * set". A per-number override of another purpose never counts. Failures are counted and routes disabled per
 * route (spec, States: "Webhook route (per purpose)"), so two routes set to one URL are disabled apart. Read
 * through the store's read cache: `db` is the root instance, never a transaction.
 */
export async function resolveStatusRoute(
  db: Db,
  accountId: string,
  numberId: string | null,
): Promise<{ route: string; url: string } | undefined> {
  if (numberId) {
    const n = await findNumberOfCached(db, accountId, numberId);
    if (n?.webhook_status) return { route: numberStatusRoute(numberId), url: n.webhook_status };
  }
  const a = await findAccountSettings(db, accountId);
  return a?.webhook_status ? { route: ACCOUNT_STATUS_ROUTE, url: a.webhook_status } : undefined;
}
