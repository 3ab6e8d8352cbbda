/** Verb name -> the class that runs it. The interpreter creates one instance per verb it runs. */
import type { Verb, VerbName } from '../types.js';
import { Dial } from './dial.js';
import { Enqueue } from './enqueue.js';
import { Connect, Start, Stop } from './stream.js';
import { Gather } from './gather.js';
import { Hangup } from './hangup.js';
import { Pause } from './pause.js';
import { Play } from './play.js';
import { Record } from './record.js';
import { RecordSession } from './record-session.js';
import { Redirect } from './redirect.js';
import { Reject } from './reject.js';
import { Say } from './say.js';
import type { VerbTask } from './verb-task.js';

export type VerbTaskClass<N extends VerbName> = new (verb: Extract<Verb, { verb: N }>) => VerbTask;
export type VerbRegistry = { readonly [N in VerbName]: VerbTaskClass<N> };

export const VERB_REGISTRY: VerbRegistry = {
  Say,
  Play,
  Dial,
  Record,
  RecordSession,
  Redirect,
  Pause,
  Hangup,
  Gather,
  Reject,
  Enqueue,
  Start,
  Stop,
  Connect,
};

export function createVerbTask(verb: Verb, registry: VerbRegistry = VERB_REGISTRY): VerbTask {
  const TaskClass = registry[verb.verb] as VerbTaskClass<typeof verb.verb>;
  return new TaskClass(verb as never);
}
