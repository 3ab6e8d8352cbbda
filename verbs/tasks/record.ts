import type { VerbContext } from '../context.js';
import type { RecordVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, VerbTaskBase, notifyAfterEnd, type VerbOutcome } from './verb-task.js';

/**
 * Record: capture the caller's audio until silence (`timeout`), a `finishOnKey` key or `maxLength`. With
 * `action` and some audio captured, RecordingDuration and RecordingPath are POSTed there and the reply replaces
 * the rest of the document. As in TwiML, nothing recorded means the next verb runs, and a call that ends while
 * recording still sends its recording to the action. Unlike TwiML, a Record
 * without `action` does not re-request the current document (a classic infinite loop); it just goes on.
 */
export class Record extends VerbTaskBase<RecordVerb> {
  readonly name = 'Record' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { maxLength, timeout, finishOnKey, playBeep, action } = this.verb;
    const result = await ctx.record({ maxLength, timeout, finishOnKey, playBeep, signal: this.signal });
    if (action === undefined || result.durationSeconds <= 0 || result.path === undefined) return CONTINUE_AFTER_WORK;
    const extras = { RecordingDuration: result.durationSeconds, RecordingPath: result.path };
    // The caller hung up while recording (a voicemail's usual end): as TwiML does, the action still gets the
    // recording; its reply has no call left to run on.
    if (this.killed) notifyAfterEnd(ctx, action, extras);
    return { next: 'fetch', via: 'action', url: action, extras };
  }
}
