import { buildStreamFrame, eventFor, EventCodes, EventIdGenerator, type EventPublisher } from '../events/index.js';
import type { MediaEngineStatus } from '../media/index.js';

const ids = new EventIdGenerator();

/**
 * MEDIA.0100 on staff streams when an rtpengine is lost, restarted or comes back: `{ engine, healthy, persistent,
 * losses, restarts, placed }`. Like TRUNK.0100 it belongs to no account and is not stored (/metrics has the
 * figures).
 */
export function publishMediaEngineState(publisher: Pick<EventPublisher, 'bus'>, s: MediaEngineStatus): void {
  const code = EventCodes.mediaEngineState;
  const { address, ...rest } = s;
  const frame = buildStreamFrame({
    code,
    event: eventFor(code).event,
    createdAt: new Date().toISOString(),
    data: { engine: address, ...rest, persistent: rest.persistent ?? null },
  });
  publisher.bus.publish({ id: ids.next(), accountId: null, staffOnly: true, frame });
}
