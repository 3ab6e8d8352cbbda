import {
  buildStreamFrame,
  eventFor,
  EventCodes,
  EventIdGenerator,
  type EventPublisher,
  type StreamFrame,
} from '../events/index.js';
import type { TrunkStateChange } from '../sip/index.js';

const ids = new EventIdGenerator();

/**
 * TRUNK.0100 on staff streams when a carrier trunk goes up or down: `{ trunk, health,
 * previous, cause, retryAfterSeconds? }`. Like PLATFORM.0001 it belongs to no account and is not stored (the
 * trunk's last state is in `simu trunks list`).
 */
export function publishTrunkState(publisher: Pick<EventPublisher, 'bus'>, c: TrunkStateChange): StreamFrame {
  const code = EventCodes.trunkState;
  const frame = buildStreamFrame({
    code,
    event: eventFor(code).event,
    createdAt: new Date().toISOString(),
    data: {
      trunk: c.trunk.name,
      health: c.health,
      previous: c.previous,
      cause: c.cause,
      ...(c.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: c.retryAfterSeconds }),
    },
  });
  publisher.bus.publish({ id: ids.next(), accountId: null, staffOnly: true, frame });
  return frame;
}
