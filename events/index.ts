/**
 * The events room (ARCHITECTURE: events/): one code catalogue, an in-process bus, the WebSocket stream and signed
 * status callbacks from a durable outbox.
 *
 * Wiring, once per process:
 *
 *   const bus = new EventBus();
 *   const publisher = new EventPublisher({ db, bus });
 *   const outbox = new StatusCallbackOutbox({ db, publisher }).start();   // picks up rows left by a restart
 *   const stream = attachStream(httpServer, { bus, consumeToken: (t) => consumeStreamToken(db, t) });
 *   ...
 *   await stream.close(); await outbox.close();
 *
 * Calling it:
 *
 * - `publisher.emit({ accountId, code: EventCodes.callAnswered, callId })` records the event (call_events), queues
 *   its status callback when the account (or the call's DID) has a status URL, and streams the frame. With only
 *   `callId`, the sid, customPayload and call snapshot are read from the calls table; pass `sid`, `customPayload`
 *   and `callSnapshot` to save that read. CALL.0300/CALL.0400 get `data.reasonCode`, `duration`, `cost` from the
 *   call when not given. Rejects with `EventPersistError` (code EVENT_PERSIST_FAILED) if the store write fails.
 * - `new PlatformConcurrencyMonitor({ db, publisher })`: publishes PLATFORM.0001 (live calls platform-wide, from the
 *   store) to staff streams whenever calls start or end, and every 10 s; `close()` it on shutdown. A caller that
 *   knows the figure can instead call `publisher.publishPlatformConcurrent(count)`.
 * - `reportSystemError(err, { publisher, operation, accountId?, callId?, sid? })`: logs with a traceId and emits
 *   SYS.0500 carrying it; returns the traceId; never throws.
 * - `mintStaffStreamToken(db)`: a single-use staff stream token for the operator CLI.
 * - Codes: never spell them; use `EventCodes.*`, `ReasonCodes.*`, `eventFor(code)`, `reasonLabel(code)`,
 *   `reasonForSipStatus(status)`.
 * - `canonicalJson`, `signWebhook`, `verifyWebhookSignature`: the webhook body form and signature (spec:
 *   Authentication 6).
 *
 * What is delivered as a status callback: every account event except WH.* (delivery reports: sending them down
 * the route they report on would loop) and PLATFORM.0001 (staff-only). Retry schedule: 5 attempts, at once then
 * after 1 s, 5 s, 30 s, 120 s (DEFAULT_RETRY_DELAYS_MS), 10 s per attempt; 3xx counts as failure. After 5
 * consecutive exhausted deliveries a route is disabled and the account gets WH.0400 with `routeDisabled: true`.
 * The status URL is stored, requested and signed in its WHATWG-serialised form (`wireUrl`). Delivered and failed
 * rows are deleted after `webhooks.deliveryRetentionDays` by the switch's hourly sweep (store/housekeeping.ts).
 */
export * from './catalogue.js';
export { canonicalJson, signWebhook, verifyWebhookSignature } from './signing.js';
export {
  buildStreamFrame,
  buildStatusCallbackBody,
  toCallSnapshot,
  CALL_SNAPSHOT_FIELDS,
  type StreamFrame,
  type CallSnapshot,
} from './envelope.js';
export { EventBus, type BusEvent, type BusListener } from './bus.js';
export { relayEventsAcrossNodes } from './node-relay.js';
export {
  EventPublisher,
  resolveStatusRoute,
  wireUrl,
  isStatusCallbackCode,
  type EmitInput,
  type EmittedEvent,
  type DeliveryDisposition,
} from './publisher.js';
export {
  StatusCallbackOutbox,
  DEFAULT_RETRY_DELAYS_MS,
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  AUTO_DISABLE_THRESHOLD,
  type StatusCallbackOutboxOptions,
} from './outbox.js';
export { postStatusCallback, type StatusPost, type StatusPostOutcome } from './status-post.js';
export {
  attachStream,
  CLOSE_POLICY_VIOLATION,
  CLOSE_REASON_ACCOUNT_SUSPENDED,
  CLOSE_REASON_KEY_REVOKED,
  type LapsedPrincipals,
  type StreamDeps,
  type StreamServer,
  type StreamPrincipal,
} from './stream.js';
export { PlatformConcurrencyMonitor, type PlatformConcurrencyMonitorOptions } from './platform-concurrency.js';
export { mintStaffStreamToken, STAFF_STREAM_TOKEN_TTL_SECONDS } from './stream-tokens.js';
export { reportSystemError, newTraceId, type SystemErrorContext } from './system-error.js';
export { EventIdGenerator } from './event-id.js';
export { EventsError, EventPersistError, InvalidEventError, CanonicalJsonError } from './errors.js';
