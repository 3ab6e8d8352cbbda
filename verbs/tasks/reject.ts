import type { VerbContext } from '../context.js';
import { VerbDocumentError } from '../errors.js';
import type { RejectVerb } from '../types.js';
import { VerbTaskBase, type VerbOutcome } from './verb-task.js';

/**
 * Reject: refuse an inbound call that still rings, without answering it: 486 Busy Here for `busy`, 603 Decline for
 * `rejected` (TwiML's reasons). Nothing is billed; the call ends as failed (END.0486 / END.0603). Only the first
 * verb of a document (the parser checks) for a call that can still be refused (the interpreter checks each
 * fetched document: otherwise it is an invalid document, with the fallback). Reaching here on a call that
 * cannot be refused (a document given directly) is the same error.
 */
export class Reject extends VerbTaskBase<RejectVerb> {
  readonly name = 'Reject' as const;

  async exec(ctx: VerbContext): Promise<VerbOutcome> {
    if (!ctx.canReject()) throw new VerbDocumentError([REJECT_NOT_RINGING], this.verb.line);
    await ctx.reject(this.verb.reason);
    return { next: 'end' };
  }
}

export const REJECT_NOT_RINGING =
  'Reject only refuses an inbound call that is still ringing; this call is answered or was placed by the platform';
