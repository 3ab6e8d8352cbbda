import { EventCodes } from '../../events/index.js';
import type { GatherResult, VerbContext } from '../context.js';
import type { ActionCallbackExtras } from '../fetch.js';
import type { GatherPrompt, GatherVerb } from '../types.js';
import { CONTINUE_AFTER_WORK, VerbTaskBase, type VerbOutcome } from './verb-task.js';
import { sayOptionsOf } from './say.js';

/**
 * Gather (TwiML semantics): play the nested Say/Play/Pause while listening for keys (and speech, when asked and
 * a recogniser is configured); the first input stops the prompt at once (barge-in). Listening ends at numDigits
 * keys, at finishOnKey, or `timeout` seconds after the prompts or after the last key. What was heard goes to
 * `action` as Digits (SpeechResult and Confidence for speech) and the reply replaces the rest of the document.
 * Nothing heard: the next verb runs, unless actionOnEmptyResult asks for the action anyway (with empty Digits).
 * Unlike TwiML, a Gather without `action` does not re-request the current document: it goes on (see Record).
 */
export class Gather extends VerbTaskBase<GatherVerb> {
  readonly name = 'Gather' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const v = this.verb;
    const input = [v.dtmf ? 'dtmf' : '', v.speech ? 'speech' : ''].filter((s) => s !== '').join(' ');
    const result = await ctx.gather({
      dtmf: v.dtmf,
      speech: v.speech,
      ...(v.numDigits === undefined ? {} : { numDigits: v.numDigits }),
      finishOnKey: v.finishOnKey,
      timeoutSeconds: v.timeout,
      hints: v.hints,
      prompts: (bargeIn) => this.#playPrompts(ctx, AbortSignal.any([this.signal, bargeIn])),
      // gather.started once it listens: after the answer (call.answered) on a call that was still ringing.
      onListening: () =>
        ctx.emit({
          code: EventCodes.gatherStarted,
          event: 'gather.started',
          data: { input, ...(v.numDigits === undefined ? {} : { numDigits: v.numDigits }), timeout: v.timeout },
        }),
      signal: this.signal,
    });
    ctx.emit({
      code: EventCodes.gatherCompleted,
      event: 'gather.completed',
      data: {
        digits: result.digits,
        ...(result.speech === undefined
          ? {}
          : { speechResult: result.speech.text, confidence: result.speech.confidence }),
        end: result.end,
      },
    });
    if (this.killed || v.action === undefined) return CONTINUE_AFTER_WORK;
    const heard = result.digits !== '' || result.speech !== undefined;
    if (!heard && !v.actionOnEmptyResult) return CONTINUE_AFTER_WORK;
    return { next: 'fetch', via: 'action', url: v.action, extras: gatherExtras(result) };
  }

  /** The nested prompts in order, each cut short (and the rest skipped) when `signal` aborts. */
  async #playPrompts(ctx: VerbContext, signal: AbortSignal): Promise<void> {
    for (const prompt of this.verb.prompts) {
      if (signal.aborted) return;
      await playPrompt(ctx, prompt, signal);
    }
  }
}

async function playPrompt(ctx: VerbContext, prompt: GatherPrompt, signal: AbortSignal): Promise<void> {
  if (prompt.verb === 'Pause') {
    if (prompt.length > 0) await ctx.pause(prompt.length, { signal });
    return;
  }
  for (let i = 0; i < prompt.loop && !signal.aborted; i++) {
    if (prompt.verb === 'Say') {
      await ctx.say(prompt.text, sayOptionsOf(prompt, signal));
      continue;
    }
    const result = await ctx.play(prompt.source, { signal });
    if (result === 'asset_missing') {
      const source = prompt.source;
      const data = source.kind === 'asset' ? { asset: source.name } : { url: source.url };
      ctx.emit({ code: EventCodes.playAssetMissing, event: 'play.asset_missing', data });
      return;
    }
  }
}

/** The action request's extra fields: Digits always, SpeechResult and Confidence when speech was heard. */
export function gatherExtras(result: GatherResult): ActionCallbackExtras {
  return {
    Digits: result.digits,
    ...(result.speech === undefined ? {} : { SpeechResult: result.speech.text, Confidence: result.speech.confidence }),
  };
}
