import type { Element } from 'libxmljs2';
import { attr, boolAttr, intAttr, optIntAttr, optionalAction, type Problems } from './parse-element.js';
import { DEFAULTS, MAX_GATHER_HINTS, type GatherPrompt, type Verb } from './types.js';

/** Gather: attributes (the schema checked their values) and its nested Say, Play and Pause prompts. */
export function gatherVerb(
  el: Element,
  line: number,
  problems: Problems,
  toVerb: (el: Element, problems: Problems) => Verb | undefined,
): Verb {
  const input = (attr(el, 'input') ?? DEFAULTS.Gather.input).trim().split(/\s+/);
  const numDigits = optIntAttr(el, 'numDigits');
  const hints = (attr(el, 'hints') ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  if (hints.length > MAX_GATHER_HINTS) {
    problems.add(line, `Gather has ${hints.length} hints; the limit is ${MAX_GATHER_HINTS}`);
  }
  const prompts: GatherPrompt[] = [];
  for (const child of el.childNodes()) {
    if (child.type() !== 'element') continue;
    const prompt = toVerb(child as Element, problems);
    if (prompt?.verb === 'Say' || prompt?.verb === 'Play' || prompt?.verb === 'Pause') prompts.push(prompt);
  }
  return {
    verb: 'Gather',
    line,
    dtmf: input.includes('dtmf'),
    speech: input.includes('speech'),
    ...(numDigits === undefined ? {} : { numDigits }),
    finishOnKey: (attr(el, 'finishOnKey') ?? DEFAULTS.Gather.finishOnKey).trim(),
    timeout: intAttr(el, 'timeout', DEFAULTS.Gather.timeout),
    ...optionalAction(el, line, problems),
    method: 'POST',
    actionOnEmptyResult: boolAttr(el, 'actionOnEmptyResult', DEFAULTS.Gather.actionOnEmptyResult),
    hints: hints.slice(0, MAX_GATHER_HINTS),
    prompts,
  };
}
