import { EventCodes } from '../../events/index.js';
import type { VerbContext } from '../context.js';
import type { PlayVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, CONTINUE_WITHOUT_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';

/**
 * Play: play a URL or an account asset `loop` times. A missing asset, or a URL that cannot be fetched or is not
 * audio (a playlist, a web page), emits PLAY.0404 and the call continues with the next verb (spec, event
 * catalogue).
 */
export class Play extends VerbTaskBase<PlayVerb> {
  readonly name = 'Play' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { source, loop } = this.verb;
    for (let i = 0; i < loop && !this.killed; i++) {
      const result = await ctx.play(source, { signal: this.signal });
      if (result === 'asset_missing') {
        const data = source.kind === 'asset' ? { asset: source.name } : { url: source.url };
        ctx.emit({ code: EventCodes.playAssetMissing, event: 'play.asset_missing', data });
        return i === 0 ? CONTINUE_WITHOUT_WORK : CONTINUE_AFTER_WORK;
      }
    }
    return CONTINUE_AFTER_WORK;
  }
}
