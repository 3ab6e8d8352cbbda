import { EVENTS_CHANNEL, type NodeLink } from '../store/index.js';
import type { BusEvent, EventBus } from './bus.js';

/**
 * Events across nodes sharing a PostgreSQL store: every account event this node publishes is also sent to the
 * other nodes (NOTIFY on simu_events: the frame, or a stored copy's id when it is too large), and what the other
 * nodes send is published on this node's bus marked `remote`, which only the stream sockets observe: it is not
 * stored again, counted again or delivered again as a status callback (its own node did that, once). Staff-only
 * events (PLATFORM.0001, a node's own count) stay on their node. Returns the function that stops sending.
 */
export function relayEventsAcrossNodes(bus: EventBus, link: NodeLink): () => void {
  link.on(EVENTS_CHANNEL, (m) => {
    const e = m.body as Omit<BusEvent, 'remote'> | undefined;
    if (!e?.frame || e.staffOnly) return;
    bus.publish({
      id: e.id,
      accountId: e.accountId,
      staffOnly: false,
      callId: e.callId,
      frame: e.frame,
      remote: m.from,
    });
  });
  return bus.observe((e) => {
    if (e.remote !== undefined || e.staffOnly || e.accountId === null) return;
    // The call snapshot stays here: only this node's observers (metrics) read it.
    link.send(EVENTS_CHANNEL, { body: { id: e.id, accountId: e.accountId, callId: e.callId, frame: e.frame } });
  });
}
