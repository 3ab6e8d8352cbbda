import { EventCodes, type BusEvent, type EventBus } from '../events/index.js';
import type { SwitchMetrics } from '../metrics/index.js';

/** Unix milliseconds in the first 48 bits of a UUIDv7 event id (events/event-id.ts). */
export function eventIdMillis(id: unknown): number | undefined {
  if (typeof id !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-7/i.test(id)) return undefined;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/**
 * Feeds the metrics from the event bus: a call's own events move its counters (CALL.0100 placed, the first
 * CALL.0180/0183/0200 its post-dial delay, CALL.0300/0400 its CDR closed), ROUTE.0100 each trunk attempt, WH.0200 and
 * WH.0400 the delivery latency of a status callback (its event's time is in its UUIDv7 id). Returns the unsubscribe.
 */
export function feedMetrics(bus: EventBus, metrics: SwitchMetrics): () => void {
  return bus.observe((e: BusEvent) => {
    const call = e.call;
    const data = e.frame.data ?? {};
    switch (e.frame.code) {
      case EventCodes.callInitiated:
        if (e.callId && call) metrics.callStarted(e.callId, call.direction);
        return;
      case EventCodes.callRinging:
      case EventCodes.callProgress:
      case EventCodes.callAnswered:
        if (e.callId && call) metrics.callProgressed(e.callId, call.direction);
        return;
      case EventCodes.callCompleted:
      case EventCodes.callFailed:
        if (e.callId && call) metrics.callEnded(e.callId, call.direction, call.status, call.talk_seconds);
        return;
      case EventCodes.routeAttempt:
        if (typeof data.trunk === 'string') metrics.trunkAttempt(e.callId, data.trunk, String(data.outcome ?? ''));
        return;
      case EventCodes.webhookDelivered:
      case EventCodes.webhookFailed: {
        const at = eventIdMillis(data.eventId);
        if (at === undefined || data.routeDisabled === true) return;
        const outcome = e.frame.code === EventCodes.webhookDelivered ? 'delivered' : 'failed';
        metrics.webhookSettled(outcome, (Date.parse(e.frame.createdAt) - at) / 1000);
        return;
      }
    }
  });
}
