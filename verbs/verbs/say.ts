import type { VerbContext } from '../context.js';
import type { SayVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';

/** Say: speak the text `loop` times (loop="0" was turned into MAX_LOOP by the parser). */
export class Say extends VerbTaskBase {
  readonly name = 'Say' as const;
  constructor(readonly verb: SayVerb) {
    super();
  }

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { text, voice, language, loop } = this.verb;
    for (let i = 0; i < loop && !this.killed; i++) {
      await ctx.say(text, {
        ...(voice === undefined ? {} : { voice }),
        ...(language === undefined ? {} : { language }),
        signal: this.signal,
      });
    }
    return CONTINUE_AFTER_WORK;
  }
}
