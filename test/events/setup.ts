import { quietLogger } from '../support/logger.js';
import type { Db } from '../../store/index.js';
import { EventBus, EventPublisher, StatusCallbackOutbox, type BusEvent } from '../../events/index.js';
import type { StatusCallbackOutboxOptions } from '../../events/index.js';
import { UrlPolicy } from '../../kit/index.js';

/** Test receivers listen on 127.0.0.1: the operator's opt-in to private destinations (webhooks.allowPrivate). */
export const loopbackAllowed = new UrlPolicy({ allowPrivate: true });

export const quiet = quietLogger;

/** One process's worth of the events room on a database: bus, publisher, started outbox, and every bus event. */
export function eventsOn(db: Db, outboxOpts: Partial<StatusCallbackOutboxOptions> = {}) {
  const bus = new EventBus();
  const seen: BusEvent[] = [];
  bus.observe((e) => seen.push(e));
  const publisher = new EventPublisher({ db, bus });
  const outbox = new StatusCallbackOutbox({
    db,
    publisher,
    retryDelaysMs: [20, 40, 80, 160, 320, 640],
    attemptTimeoutMs: 1000,
    pollIntervalMs: 20,
    logger: quiet,
    urlPolicy: loopbackAllowed,
    ...outboxOpts,
  }).start();
  return { bus, publisher, outbox, seen };
}
