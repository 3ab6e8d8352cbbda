import type { VerbContext } from '../context.js';
import type { ConnectVerb, StartVerb, StopVerb } from '../types-live.js';
import { CONTINUE_AFTER_WORK, CONTINUE_WITHOUT_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';

/**
 * <Start><Stream>: forks the caller's audio to the customer's WebSocket (Twilio Media Streams messages) and goes on
 * with the next verb at once; the stream runs until <Stop><Stream>, the WebSocket closes, or the call ends.
 */
export class Start extends VerbTaskBase<StartVerb> {
  readonly name = 'Start' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    await ctx.startStream?.(this.verb.stream);
    return CONTINUE_WITHOUT_WORK;
  }
}

/** <Stop><Stream name>: stops the stream <Start> opened under that name (every one when no name is given). */
export class Stop extends VerbTaskBase<StopVerb> {
  readonly name = 'Stop' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    await ctx.stopStream?.(this.verb.name);
    return CONTINUE_WITHOUT_WORK;
  }
}

/**
 * <Connect><Stream>: the call's audio goes to the WebSocket and the server's `media` is played to the caller
 * (marks and clear obeyed) until the WebSocket closes; then the action, if any, or the next verb.
 */
export class Connect extends VerbTaskBase<ConnectVerb> {
  readonly name = 'Connect' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    if (ctx.connectStream) await ctx.connectStream(this.verb.stream, { signal: this.signal });
    if (this.verb.action === undefined || this.killed) return CONTINUE_AFTER_WORK;
    return { next: 'fetch', via: 'action', url: this.verb.action, extras: {} };
  }
}
