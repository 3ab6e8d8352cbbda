import type { VerbContext } from '../context.js';
import type { QueueOutcome, QueueTicket } from '../context-live.js';
import { WebhookFetchError } from '../errors.js';
import type { ActionCallbackExtras } from '../fetch.js';
import type { EnqueueVerb } from '../types-live.js';
import { CONTINUE_AFTER_WORK, VerbTaskBase, notifyAfterEnd, type VerbOutcome } from './verb-task.js';
import { sayOptionsOf } from './say.js';

/**
 * Enqueue (TwiML): the caller waits in the account's queue `name` until an agent's <Dial><Queue> takes it (the two
 * are bridged until one hangs up), the API dequeues it to a URL, or the call ends.
 * While waiting it hears the waitUrl's document (Say, Play, Pause, Hangup; requested again each time it ends, with
 * QueuePosition, CurrentQueueSize, QueueTime and AvgQueueTime; a Hangup there leaves with QueueResult hangup), or
 * the waitUrl's audio in a loop, or by default the hold audio with its position spoken when it joins and each time
 * it moves up. Then the action, if any, gets QueueResult and QueueTime and its
 * reply runs next; without one the document goes on.
 */
export class Enqueue extends VerbTaskBase<EnqueueVerb> {
  readonly name = 'Enqueue' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    const { name, maxSize, action, waitUrl } = this.verb;
    let outcome: QueueOutcome;
    if (!ctx.joinQueue) {
      outcome = { result: 'error', queueTimeSeconds: 0 };
    } else {
      const ticket = await ctx.joinQueue(name, { maxSize });
      const hold = AbortSignal.any([this.signal, ticket.holdOver]);
      const onKill = (): void => ticket.leave('hangup');
      this.signal.addEventListener('abort', onKill, { once: true });
      try {
        await this.#hold(ctx, ticket, hold, waitUrl);
        outcome = await ticket.outcome;
      } catch (e) {
        if (!hold.aborted) ticket.leave('error');
        if (!(e instanceof WebhookFetchError) && !hold.aborted) throw e;
        outcome = await ticket.outcome;
      } finally {
        // Kept until the outcome: a caller hanging up while bridged must end the bridge.
        this.signal.removeEventListener('abort', onKill);
      }
    }
    const extras: ActionCallbackExtras = { QueueResult: outcome.result, QueueTime: outcome.queueTimeSeconds };
    if (outcome.redirectUrl !== undefined && !this.killed) {
      return { next: 'fetch', via: 'redirect', url: outcome.redirectUrl, extras };
    }
    if (action === undefined) return CONTINUE_AFTER_WORK;
    if (this.killed) notifyAfterEnd(ctx, action, extras);
    return { next: 'fetch', via: 'action', url: action, extras };
  }

  /** What the caller hears until `signal` aborts; a <Leave> or <Hangup> in the wait document returns early. */
  async #hold(ctx: VerbContext, ticket: QueueTicket, signal: AbortSignal, waitUrl: string | undefined): Promise<void> {
    let audioOnly = false;
    let announced = 0;
    while (!signal.aborted) {
      if (waitUrl === undefined) {
        // The position is spoken when the caller joins and each time it moves up, not every loop (a Say is TTS).
        const position = ticket.position();
        if (position !== announced) {
          announced = position;
          await ctx.say(`You are number ${position} in the queue. Please hold.`, { signal });
        }
        if (signal.aborted) return;
        if (ctx.playHold) await ctx.playHold({ signal });
        else await ctx.pause(10, { signal });
        continue;
      }
      if (audioOnly) {
        if ((await ctx.play({ kind: 'url', url: waitUrl }, { signal })) === 'asset_missing') return;
        continue;
      }
      let document;
      try {
        document = await ctx.fetchDocument(waitUrl, this.#waitFields(ticket), { signal });
      } catch (e) {
        // A waitUrl that answers audio rather than a document is hold music, played in a loop.
        if (e instanceof WebhookFetchError && e.reason === 'invalid_document' && !signal.aborted) {
          audioOnly = true;
          continue;
        }
        throw e;
      }
      for (const v of document.verbs) {
        if (signal.aborted) return;
        if (v.verb === 'Say') await ctx.say(v.text, sayOptionsOf(v, signal));
        else if (v.verb === 'Play') await ctx.play(v.source, { signal });
        else if (v.verb === 'Pause') await ctx.pause(v.length, { signal });
        else if (v.verb === 'Hangup') return ticket.leave('hangup');
      }
      // A document that spends no time would be requested again at once: wait a second between requests.
      if (document.verbs.length === 0) await ctx.pause(1, { signal });
    }
  }

  #waitFields(ticket: QueueTicket): ActionCallbackExtras {
    return {
      QueuePosition: ticket.position(),
      CurrentQueueSize: ticket.size(),
      QueueTime: Math.round(ticket.waitedSeconds()),
      AvgQueueTime: Math.round(ticket.averageWaitSeconds()),
    };
  }
}
