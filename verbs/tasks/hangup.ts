import type { HangupVerb } from '../types.js';
import { VerbTaskBase, type VerbOutcome } from './verb-task.js';

/** Hangup: end the call; verbs after it never run. The interpreter does the hanging up. */
export class Hangup extends VerbTaskBase<HangupVerb> {
  readonly name = 'Hangup' as const;

  exec(): Promise<VerbOutcome> {
    return Promise.resolve({ next: 'hangup' });
  }
}
