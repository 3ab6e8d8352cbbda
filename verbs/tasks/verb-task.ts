/**
 * One running verb. As in jambonz-feature-server's tasks: a class per verb with exec() and kill(); the
 * interpreter loop only sees this interface and the outcome each exec() returns.
 */
import type { VerbContext } from '../context.js';
import { abortQuietly } from '../../kit/index.js';
import type { ActionCallbackExtras } from '../fetch.js';
import type { VerbName } from '../types.js';

export type VerbOutcome =
  /** Go on with the next verb. `didWork`: the verb spent call time (resets the Redirect chain count). */
  | { readonly next: 'continue'; readonly didWork: boolean }
  /** End the call now. */
  | { readonly next: 'hangup' }
  /** The verb already ended the call its own way (Reject): stop without hanging up. */
  | { readonly next: 'end' }
  /** Fetch a new document from `url` and run it instead of the rest of this one (TwiML semantics). */
  | {
      readonly next: 'fetch';
      readonly url: string;
      readonly extras: ActionCallbackExtras;
      readonly via: 'redirect' | 'action';
    };

export interface VerbTask {
  readonly name: VerbName;
  /** Set by the interpreter: no verb follows this one in its document (what it leaves behind is not needed). */
  lastOfDocument?: boolean;
  exec(ctx: VerbContext): Promise<VerbOutcome>;
  /** Stops the verb mid-way; safe to call twice and before or after exec(). */
  kill(): void;
}

/** A verb's task: the parsed verb `V` it runs, and the abort signal kill() fires. */
export abstract class VerbTaskBase<V = unknown> implements VerbTask {
  abstract readonly name: VerbName;
  lastOfDocument?: boolean;
  readonly #abort = new AbortController();

  constructor(readonly verb: V) {}

  protected get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get killed(): boolean {
    return this.#abort.signal.aborted;
  }

  abstract exec(ctx: VerbContext): Promise<VerbOutcome>;

  kill(): void {
    abortQuietly(this.#abort);
  }
}

export const CONTINUE_AFTER_WORK: VerbOutcome = { next: 'continue', didWork: true };
export const CONTINUE_WITHOUT_WORK: VerbOutcome = { next: 'continue', didWork: false };

/** How long the action request of a verb whose call has ended may take. */
const ACTION_AFTER_END_MS = 10_000;

/**
 * Requests a verb's action after its call ended (TwiML's rule for Dial and Record): the server learns the outcome,
 * the reply is not run. Bounded in time, never awaited, failures ignored (the status webhook is the durable record).
 */
export function notifyAfterEnd(ctx: VerbContext, url: string, extras: ActionCallbackExtras): void {
  void ctx.fetchDocument(url, extras, { signal: AbortSignal.timeout(ACTION_AFTER_END_MS) }).catch(() => {});
}
