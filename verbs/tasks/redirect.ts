import type { RedirectVerb } from '../types.js';
import { VerbTaskBase, type VerbOutcome } from './verb-task.js';

/** Redirect: fetch the document at the URL (base fields only, spec "Action callbacks") and run it instead. */
export class Redirect extends VerbTaskBase<RedirectVerb> {
  readonly name = 'Redirect' as const;

  exec(): Promise<VerbOutcome> {
    return Promise.resolve({ next: 'fetch', via: 'redirect', url: this.verb.url, extras: {} });
  }
}
