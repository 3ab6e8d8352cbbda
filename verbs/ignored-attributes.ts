/**
 * Attributes a verb document may carry that Simu does not know. The schema lets any
 * undeclared attribute through unvalidated (xs:anyAttribute in simu-verbs.xsd) so that a document written for
 * TwiML (`<Say rate="fast">`, `<Number sendDigits="1">`) runs instead of falling back; this file names the ones
 * Simu reads, finds the others, and the interpreter reports each once per call as VERB.0299. Unknown elements
 * and bad values of known attributes stay errors (the schema and parse.ts).
 */
import type { Element } from 'libxmljs2';

/** Every attribute Simu reads, per element; the same set simu-verbs.xsd declares (test/verbs keeps them equal). */
export const KNOWN_ATTRIBUTES: Readonly<Record<string, readonly string[]>> = {
  Response: ['customPayload'],
  Say: ['voice', 'language', 'loop'],
  Play: ['asset', 'loop'],
  Dial: ['action', 'method', 'timeout', 'callerId', 'timeLimit', 'record', 'sequential'],
  Number: [
    'machineDetection',
    'machineDetectionTimeout',
    'machineDetectionSpeechThreshold',
    'machineDetectionSpeechEndThreshold',
    'machineDetectionSilenceTimeout',
    'amdStatusCallback',
    'amdStatusCallbackMethod',
  ],
  Extension: [],
  Record: ['action', 'method', 'maxLength', 'timeout', 'finishOnKey', 'playBeep'],
  RecordSession: ['channels', 'maxLength'],
  Redirect: ['method'],
  Pause: ['length'],
  Hangup: [],
  Gather: ['input', 'numDigits', 'finishOnKey', 'timeout', 'action', 'method', 'actionOnEmptyResult', 'hints'],
  Reject: ['reason'],
  Queue: [],
  Enqueue: ['waitUrl', 'action', 'method', 'maxSize'],
  Start: [],
  Stop: [],
  Connect: ['action', 'method'],
  Stream: ['url', 'name', 'track'],
  Parameter: ['name', 'value'],
};

/** One unknown attribute of a document: the element it was on, its name, and the line of its first use. */
export interface IgnoredAttribute {
  readonly element: string;
  readonly attribute: string;
  readonly line: number;
}

/**
 * Most distinct (element, attribute) pairs reported from one document: a hostile document with thousands of
 * invented attributes yields a bounded list (and so a bounded number of events).
 */
export const MAX_IGNORED_PER_DOCUMENT = 32;

/** The unknown attributes of a schema-valid document, one entry per (element, attribute), in document order. */
export function findIgnoredAttributes(root: Element): IgnoredAttribute[] {
  const found = new Map<string, IgnoredAttribute>();
  const visit = (el: Element): void => {
    const known = KNOWN_ATTRIBUTES[el.name()] ?? [];
    for (const a of el.attrs()) {
      if (found.size >= MAX_IGNORED_PER_DOCUMENT) return;
      const ns = a.namespace()?.prefix();
      const attribute = ns ? `${ns}:${a.name()}` : a.name();
      if (!ns && known.includes(attribute)) continue;
      const key = `${el.name()}@${attribute}`;
      if (!found.has(key)) found.set(key, { element: el.name(), attribute, line: el.line() });
    }
    if (el.name() === 'Say') return; // its children are SSML, whose attributes verbs/ssml.ts reads
    for (const child of el.childNodes()) if (child.type() === 'element') visit(child as Element);
  };
  visit(root);
  return [...found.values()];
}
