import { randomBytes } from 'node:crypto';
import { roomLogger, type Logger } from '../config/index.js';
import { EventCodes, eventFor } from './catalogue.js';
import { buildStreamFrame } from './envelope.js';
import { eventIds } from './event-id.js';
import type { EventPublisher } from './publisher.js';

export interface SystemErrorContext {
  publisher: EventPublisher;
  /** What was being done, e.g. 'calls.onBye' (logged, not shown to the account). */
  operation: string;
  accountId?: string | null;
  callId?: string;
  sid?: string;
  logger?: Logger;
}

/** 16 random bytes as hex: short enough to read out to support, unique enough to find one log line. */
export const newTraceId = (): string => randomBytes(16).toString('hex');

/**
 * An internal error while handling a call event (spec: SYS.0500 "carries a traceId"). The error itself, with its
 * stack, goes only to the log; the account sees the event with the same `traceId` and nothing internal, so that
 * support can match the two. Without an account the event goes to staff streams only. Never throws: this is the
 * error path. Returns the trace id.
 */
export async function reportSystemError(err: unknown, ctx: SystemErrorContext): Promise<string> {
  const traceId = newTraceId();
  const log = ctx.logger ?? roomLogger('events');
  log.error({ err, traceId, operation: ctx.operation, accountId: ctx.accountId, sid: ctx.sid }, 'system error');
  try {
    if (ctx.accountId) {
      await ctx.publisher.emit({
        accountId: ctx.accountId,
        code: EventCodes.systemError,
        callId: ctx.callId,
        sid: ctx.sid,
        data: { traceId },
      });
    } else {
      const code = EventCodes.systemError;
      ctx.publisher.bus.publish({
        id: eventIds.next(),
        accountId: null,
        staffOnly: true,
        frame: buildStreamFrame({
          code,
          event: eventFor(code).event,
          sid: ctx.sid,
          createdAt: new Date().toISOString(),
          data: { traceId },
        }),
      });
    }
  } catch (e) {
    log.error({ err: e, traceId }, 'could not emit SYS.0500');
  }
  return traceId;
}
