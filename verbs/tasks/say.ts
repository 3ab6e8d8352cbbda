import type { SayOptions, VerbContext } from '../context.js';
import type { SayVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';

/** How a Say verb is spoken, wherever it runs (on its own, in a Gather, in a queue's wait document). */
export function sayOptionsOf(verb: SayVerb, signal: AbortSignal): SayOptions {
  const { voice, language, ssml } = verb;
  return {
    ...(voice === undefined ? {} : { voice }),
    ...(language === undefined ? {} : { language }),
    ...(ssml === undefined ? {} : { ssml }),
    signal,
  };
}

/** Say: speak the text `loop` times (loop="0" was turned into MAX_LOOP by the parser). */
export class Say extends VerbTaskBase<SayVerb> {
  readonly name = 'Say' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { text, loop } = this.verb;
    for (let i = 0; i < loop && !this.killed; i++) await ctx.say(text, sayOptionsOf(this.verb, this.signal));
    return CONTINUE_AFTER_WORK;
  }
}
