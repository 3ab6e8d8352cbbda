import type { VerbContext } from '../context.js';
import type { PauseVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, CONTINUE_WITHOUT_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';

/** Pause: silence for `length` seconds. The context owns the timer, so tests need not sleep. */
export class Pause extends VerbTaskBase<PauseVerb> {
  readonly name = 'Pause' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    if (this.verb.length === 0) return CONTINUE_WITHOUT_WORK;
    await ctx.pause(this.verb.length, { signal: this.signal });
    return CONTINUE_AFTER_WORK;
  }
}
