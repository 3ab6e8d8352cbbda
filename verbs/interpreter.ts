/**
 * The interpreter loop: run a document's verbs in order through a VerbContext. Kept small on purpose (STYLE.md:
 * avoid jambonz's 3,000-line call session); every verb's behaviour lives in verbs/verbs/.
 *
 * TwiML semantics:
 * - Redirect, and any verb with an `action` URL, hand control to the fetched document; the verbs after it in
 *   the current document never run.
 * - Hangup ends the call; so does reaching the end of a document. Reject refuses a ringing call and stops.
 * - A failed fetch (WebhookFetchError) emits WH.0400 and runs the account's fallback (spec, "Fallback"):
 *   message -> speak it and hang up; play -> play it and hang up; drop -> hang up.
 * - Anything else that fails while a document runs is the platform's fault, never the caller's: it is handed to
 *   `onError` (the call reports SYS.0500 with a trace id) and the caller gets the same fallback, then the call ends
 *   with the end `error`.
 * - An attribute Simu does not know (parse.ts lets it through) is reported once per call as VERB.0299.
 * - More than `maxRedirects` Redirects in a row with no verb spending call time in between is a loop; the
 *   call is hung up rather than left spinning on the account's server.
 * kill() stops the running verb and the loop without hanging up: it is what the call uses when the call is
 * ending for another reason (caller hung up, API hangup, balance exhausted).
 */
import { EventCodes } from '../events/index.js';
import { abortQuietly } from '../kit/index.js';
import type { VerbContext } from './context.js';
import { RedirectLimitError, WebhookFetchError } from './errors.js';
import type { ActionCallbackExtras } from './fetch.js';
import type { VerbDocument } from './types.js';
import { VERB_REGISTRY, createVerbTask, type VerbRegistry } from './verbs/registry.js';
import type { VerbTask } from './verbs/verb-task.js';
import { REJECT_NOT_RINGING } from './verbs/reject.js';

export const DEFAULT_MAX_REDIRECTS = 10;
/** Most VERB.0299 events one call emits, whatever its documents hold (each document lists at most 32 pairs). */
export const MAX_IGNORED_REPORTS_PER_CALL = 64;

export interface InterpreterOptions {
  readonly maxRedirects?: number;
  readonly registry?: VerbRegistry;
  /** A platform failure, told before the fallback runs (the call reports it). Must not throw. */
  readonly onError?: (error: unknown) => void;
}

export type InterpreterEnd =
  | { readonly reason: 'hangup' } // a Hangup verb
  | { readonly reason: 'rejected' } // a Reject verb refused the ringing call
  | { readonly reason: 'end_of_document' }
  | { readonly reason: 'killed' }
  | { readonly reason: 'fallback'; readonly error: WebhookFetchError }
  | { readonly reason: 'redirect_limit'; readonly error: RedirectLimitError }
  | { readonly reason: 'error'; readonly error: unknown }; // a verb or a context operation threw; fallback run

/** Where the interpreter starts: a document already in hand, or a URL to fetch the first one from. */
export type InterpreterStart = { readonly document: VerbDocument } | { readonly url: string };

export class Interpreter {
  readonly #ctx: VerbContext;
  readonly #maxRedirects: number;
  readonly #registry: VerbRegistry;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #abort = new AbortController();
  #current: VerbTask | undefined;
  #running = false;
  /** `element@attribute` pairs already reported as ignored on this call (VERB.0299 is once per call). */
  readonly #reported = new Set<string>();

  constructor(ctx: VerbContext, options: InterpreterOptions = {}) {
    this.#ctx = ctx;
    this.#maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    this.#registry = options.registry ?? VERB_REGISTRY;
    this.#onError = options.onError;
  }

  get killed(): boolean {
    return this.#abort.signal.aborted;
  }

  /** Runs until the call is hung up, the documents run out, or kill(). Rejects only if called twice. */
  async run(start: InterpreterStart): Promise<InterpreterEnd> {
    if (this.#running) throw new TypeError('Interpreter.run() called twice');
    this.#running = true;
    try {
      return await this.#loop(start);
    } catch (error) {
      if (this.killed) return { reason: 'killed' };
      this.#current?.kill(); // a verb that threw while its media still runs
      this.#onError?.(error);
      await this.#platformFallback();
      return this.killed ? { reason: 'killed' } : { reason: 'error', error };
    }
  }

  /** Stops the running verb (its kill()) and the loop. Safe to call twice, before or after run(). */
  kill(): void {
    abortQuietly(this.#abort);
    this.#current?.kill();
  }

  async #loop(start: InterpreterStart): Promise<InterpreterEnd> {
    let document: VerbDocument | InterpreterEnd =
      'document' in start ? start.document : await this.#fetch(start.url, {});
    let redirectsInARow = 0;
    for (;;) {
      if (this.killed) return { reason: 'killed' };
      if (!('verbs' in document)) return document;
      if (document.customPayload !== undefined) await this.#ctx.setCustomPayload(document.customPayload);
      this.#reportIgnored(document);
      let handedOver: { url: string; extras: ActionCallbackExtras } | undefined;
      for (const [i, verb] of document.verbs.entries()) {
        if (this.killed) return { reason: 'killed' };
        const task = createVerbTask(verb, this.#registry);
        task.lastOfDocument = i === document.verbs.length - 1;
        this.#current = task;
        const outcome = await task.exec(this.#ctx);
        this.#current = undefined;
        if (this.killed) return { reason: 'killed' };
        if (outcome.next === 'end') return { reason: 'rejected' };
        if (outcome.next === 'hangup') {
          await this.#ctx.hangup('verb');
          return { reason: 'hangup' };
        }
        if (outcome.next === 'continue') {
          if (outcome.didWork) redirectsInARow = 0;
          continue;
        }
        if (outcome.via === 'redirect') {
          redirectsInARow += 1;
          if (redirectsInARow > this.#maxRedirects) {
            await this.#ctx.hangup('redirect_limit');
            return { reason: 'redirect_limit', error: new RedirectLimitError(this.#maxRedirects) };
          }
        } else {
          redirectsInARow = 0;
        }
        handedOver = { url: outcome.url, extras: outcome.extras };
        break;
      }
      if (handedOver === undefined) {
        await this.#ctx.hangup('end_of_document');
        return { reason: 'end_of_document' };
      }
      document = await this.#fetch(handedOver.url, handedOver.extras);
    }
  }

  /** The next document, or the end reached by running the fallback when the fetch failed. */
  async #fetch(url: string, extras: ActionCallbackExtras): Promise<VerbDocument | InterpreterEnd> {
    try {
      const document = await this.#ctx.fetchDocument(url, extras, { signal: this.#abort.signal });
      if (document.verbs[0]?.verb === 'Reject' && !this.#ctx.canReject()) {
        // A document error like any other (docs/verbs.md, Reject): the call can no longer be refused.
        throw new WebhookFetchError('invalid_document', url, `invalid verb document: ${REJECT_NOT_RINGING}`, {
          status: 200,
        });
      }
      return document;
    } catch (error) {
      if (this.killed) return { reason: 'killed' };
      if (!(error instanceof WebhookFetchError)) throw error;
      await this.#runFallback(error);
      return this.killed ? { reason: 'killed' } : { reason: 'fallback', error };
    }
  }

  async #runFallback(error: WebhookFetchError): Promise<void> {
    const { mode } = this.#ctx.fallback;
    this.#ctx.emit({
      code: EventCodes.webhookFailed,
      event: 'webhook.failed',
      data: {
        url: error.url,
        reason: error.reason,
        ...(error.status === undefined ? {} : { status: error.status }),
        fallback: mode,
      },
    });
    try {
      await this.#playFallback();
    } finally {
      if (!this.killed) await this.#ctx.hangup('fallback');
    }
  }

  /** The account's fallback message or audio, if it has one (drop has none). */
  async #playFallback(): Promise<void> {
    const { mode, value, language } = this.#ctx.fallback;
    const signal = this.#abort.signal;
    if (mode === 'message' && value.trim() !== '')
      await this.#ctx.say(value, { signal, ...(language === undefined ? {} : { language }) });
    if (mode === 'play' && value.trim() !== '') await this.#ctx.play({ kind: 'url', url: value }, { signal });
  }

  /**
   * After a platform failure: the fallback as for a failed webhook, then hang up. Whatever fails now is the same
   * failure (the media may be what broke): the caller is hung up rather than left in silence.
   */
  async #platformFallback(): Promise<void> {
    try {
      await this.#playFallback();
    } catch {
      // Already reported through onError; the hangup below still ends the call.
    }
    if (!this.killed) await this.#hangupQuietly();
  }

  /** VERB.0299 for each unknown attribute (element, name) not yet reported on this call. */
  #reportIgnored(document: VerbDocument): void {
    for (const a of document.ignoredAttributes ?? []) {
      const key = `${a.element}@${a.attribute}`;
      if (this.#reported.has(key) || this.#reported.size >= MAX_IGNORED_REPORTS_PER_CALL) continue;
      this.#reported.add(key);
      this.#ctx.emit({
        code: EventCodes.verbAttributeIgnored,
        event: 'verb.attribute_ignored',
        data: { element: a.element, attribute: a.attribute, line: a.line },
      });
    }
  }

  async #hangupQuietly(): Promise<void> {
    try {
      await this.#ctx.hangup('error');
    } catch {
      // The call is already in trouble; the error being reported is the first one.
    }
  }
}
