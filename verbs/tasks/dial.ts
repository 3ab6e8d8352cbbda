import type { VerbContext } from '../context.js';
import type { DialVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, VerbTaskBase, notifyAfterEnd, type VerbOutcome } from './verb-task.js';

/**
 * Dial: call one PSTN number or on-net extension and bridge it. With `action`, the outcome is POSTed there
 * (DialCallStatus, DialCallDuration; spec "Action callbacks") and the reply replaces the rest of the document,
 * whatever the outcome; without it the document goes on with the next verb. When the call ends during the Dial,
 * the action is still requested (its reply is not run).
 */
export class Dial extends VerbTaskBase<DialVerb> {
  readonly name = 'Dial' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { target, targets, sequential, timeout, callerId, timeLimit, record, action } = this.verb;
    const result = await ctx.dial(target, {
      ...(targets.length > 1 ? { targets, sequential } : {}),
      timeout,
      ...(callerId === undefined ? {} : { callerId }),
      timeLimit,
      record,
      signal: this.signal,
      ...(this.lastOfDocument === true && action === undefined ? { endsCall: true } : {}),
    });
    if (action === undefined) return CONTINUE_AFTER_WORK;
    const extras = { DialCallStatus: result.status, DialCallDuration: result.durationSeconds };
    // The call is ending (the caller hung up, an API hangup, a billing cut): as TwiML does, the action still
    // learns how the Dial ended; its reply has no call left to run on.
    if (this.killed) notifyAfterEnd(ctx, action, extras);
    return { next: 'fetch', via: 'action', url: action, extras };
  }
}
