import type { VerbContext } from '../context.js';
import type { RecordSessionVerb } from '../types.js';
import { CONTINUE_WITHOUT_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';

/** RecordSession: start recording both directions for the rest of the call, then go straight on. */
export class RecordSession extends VerbTaskBase<RecordSessionVerb> {
  readonly name = 'RecordSession' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { channels, maxLength } = this.verb;
    await ctx.startSessionRecording({ channels, ...(maxLength === undefined ? {} : { maxLength }) });
    return CONTINUE_WITHOUT_WORK;
  }
}
