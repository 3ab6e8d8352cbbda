/**
 * parseVerbDocument: bytes of a call-control reply -> a typed VerbDocument, or VerbDocumentError.
 *
 * Safety (ARCHITECTURE.md, "verb documents"): a reply comes from a customer's server, so it is untrusted.
 * - Size is capped before parsing (MAX_DOCUMENT_BYTES).
 * - Any DOCTYPE is refused before libxml sees the text. A verb document never needs one, and refusing it
 *   removes external entities (XXE), parameter entities and entity-expansion bombs in one move.
 * - libxml is still run with entity substitution, DTD loading and network access off, as a second wall.
 * Then the document is validated against simu-verbs.xsd (loaded once) and the rules XSD 1.0 cannot say are
 * checked here (see playSource, dialTarget, absoluteHttpUrl, responsePayload). Attributes Simu does not know are
 * let through and listed in `ignoredAttributes` (ignored-attributes.ts); unknown elements stay errors.
 */
import { readFileSync } from 'node:fs';
import libxmljs from 'libxmljs2';
import type { Document, Element } from 'libxmljs2';
import { VerbDocumentError } from './errors.js';
import { findIgnoredAttributes } from './ignored-attributes.js';
import {
  Problems,
  absoluteHttpUrl,
  attr,
  boolAttr,
  intAttr,
  loopOf,
  optIntAttr,
  optionalAction,
  ownText,
} from './parse-element.js';
import { gatherVerb } from './parse-gather.js';
import { MAX_SAY_SSML_CHARS, hasSsml, sayText, sayToSsml } from './ssml.js';
import { liveVerb } from './parse-live.js';
import { conferenceTarget } from './parse-conference.js';
import {
  DEFAULTS,
  MAX_LOOP,
  VERB_NAMES,
  type DialRecordMode,
  type DialTarget,
  type NumberMachineDetection,
  type PlaySource,
  type Verb,
  type VerbDocument,
} from './types.js';

/** Largest verb document accepted, in UTF-8 bytes. TwiML's own limit is 64 KB as well. */
export const MAX_DOCUMENT_BYTES = 64 * 1024;
/** Longest Say text, in characters (TwiML's limit for one Say). */
export const MAX_SAY_CHARS = 4096;

/** Parser options: the libxml flags that would fetch or expand anything are off, explicitly. */
export const SAFE_PARSER_OPTIONS = {
  noent: false, // XML_PARSE_NOENT off: never substitute entities
  dtdload: false, // never load an external subset
  dtdattr: false,
  dtdvalid: false,
  nonet: true, // XML_PARSE_NONET: no network access even if something asks
  xinclude: false,
  huge: false, // keep libxml's built-in size and depth limits
  recover: false,
} as const;

let schema: Document | undefined;

/** The schema, parsed on first use and kept for the life of the process. */
function verbSchema(): Document {
  if (schema === undefined) {
    const text = readFileSync(new URL('./simu-verbs.xsd', import.meta.url), 'utf8');
    schema = libxmljs.parseXml(text, SAFE_PARSER_OPTIONS);
  }
  return schema;
}

/** What a valid value looks like, appended to libxml's "not a valid value of the local atomic type". */
const ATTRIBUTE_HINTS: Readonly<Record<string, string>> = {
  'Say@loop': `an integer from 0 to ${MAX_LOOP} (0 repeats until interrupted)`,
  'Say@voice': 'a voice name of letters, digits and ._+- (at most 64)',
  'Say@language': 'a language tag such as en or en-US',
  'Play@loop': `an integer from 0 to ${MAX_LOOP} (0 repeats until interrupted)`,
  'Play@asset': 'an asset name of letters, digits and ._- (at most 128)',
  'Dial@timeout': 'an integer number of seconds from 1 to 600',
  'Dial@timeLimit': 'an integer number of seconds from 1 to 86400',
  'Dial@callerId': 'an E.164 number such as +254700000001',
  'Dial@record':
    'one of do-not-record, record-from-answer, record-from-ringing, record-from-answer-dual, record-from-ringing-dual',
  'Dial@method': 'POST (every request Simu sends is a signed JSON POST)',
  'Record@method': 'POST (every request Simu sends is a signed JSON POST)',
  'Redirect@method': 'POST (every request Simu sends is a signed JSON POST)',
  'Record@maxLength': 'an integer number of seconds from 1 to 86400',
  'Record@timeout': 'an integer number of seconds from 0 to 86400',
  'Record@finishOnKey': 'up to 12 of the keys 0-9 * #',
  'Record@playBeep': 'true or false',
  'RecordSession@channels': 'mono or dual',
  'RecordSession@maxLength': 'an integer number of seconds from 1 to 86400',
  'Pause@length': 'an integer number of seconds from 0 to 3600',
  'Gather@input': 'dtmf, speech, or dtmf speech',
  'Gather@numDigits': 'an integer from 1 to 64',
  'Gather@finishOnKey': 'one of the keys 0-9 * #, or empty for none',
  'Gather@timeout': 'an integer number of seconds from 1 to 600',
  'Gather@method': 'POST (every request Simu sends is a signed JSON POST)',
  'Gather@actionOnEmptyResult': 'true or false',
  'Gather@hints': 'a comma-separated list of words or phrases, at most 2048 characters',
  'Reject@reason': 'busy or rejected',
  'Response@customPayload': 'a JSON object of at most 8192 characters',
  Number: 'a phone number such as +254700000001 or 0700 000001',
  'Number@machineDetection': 'Enable or DetectMessageEnd',
  'Number@machineDetectionTimeout': 'an integer number of seconds from 3 to 60',
  'Number@machineDetectionSpeechThreshold': 'an integer number of milliseconds from 1000 to 6000',
  'Number@machineDetectionSpeechEndThreshold': 'an integer number of milliseconds from 500 to 5000',
  'Number@machineDetectionSilenceTimeout': 'an integer number of milliseconds from 2000 to 10000',
  'Number@amdStatusCallback': 'an absolute http:// or https:// URL',
  'Number@amdStatusCallbackMethod': 'POST (every request Simu sends is a signed JSON POST)',
  Extension: 'an extension number of 1 to 20 digits',
};

function lineOfOffset(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Turns one libxml schema-validation message into a sentence a customer can act on. */
function explainValidationMessage(raw: string): string {
  const message = raw.trim().replace(/\.$/, '');
  const element = /^Element '([^']+)'/.exec(message)?.[1];
  const attribute = /attribute '([^']+)'/.exec(message)?.[1];
  if (/No matching global declaration available for the validation root/.test(message)) {
    return `${message}: the root element must be <Response> with no namespace`;
  }
  if (/This element is not expected/.test(message) && element !== undefined) {
    if (element === 'Client' || element === 'Sip') {
      return `${message}: Dial takes <Number> (E.164) or <Extension> (an end-user's extension number)`;
    }
    if (!/Expected is/.test(message)) return `${message}: expected one of ${VERB_NAMES.join(', ')}`;
  }
  if (/Element content is not allowed, because the content type is a simple type/.test(message)) {
    return `${message}: <${element ?? '?'}> takes text only, no child elements`;
  }
  if (/is not a valid value|\[facet '/.test(message)) {
    const key = attribute !== undefined && element !== undefined ? `${element}@${attribute}` : (element ?? '');
    const hint = ATTRIBUTE_HINTS[key];
    if (hint !== undefined) return `${message}: expected ${hint}`;
  }
  return message;
}

/**
 * Parses and validates a verb document. Throws VerbDocumentError (code VERB_DOCUMENT_INVALID) naming the line
 * and the problem; never returns a partially valid document.
 */
/**
 * Parses and validates a verb document. The same text gives the same document, so the last few hundred short
 * documents are kept (a carrier's DIDs mostly answer with the same few documents, and libxml parse and schema
 * validation are a large share of a call's CPU). Documents come back deep-frozen, shared between calls.
 */
export function parseVerbDocument(xml: string): VerbDocument {
  if (typeof xml !== 'string' || xml.length > PARSED_CACHE_MAX_CHARS) return parseVerbDocumentText(xml);
  const hit = parsed.get(xml);
  if (hit !== undefined) {
    // Most recently used last: the oldest entry is the first one the Map iterates.
    parsed.delete(xml);
    parsed.set(xml, hit);
    return hit;
  }
  const doc = deepFreeze(parseVerbDocumentText(xml));
  if (parsed.size >= PARSED_CACHE_SIZE) parsed.delete(parsed.keys().next().value as string);
  parsed.set(xml, doc);
  return doc;
}

const PARSED_CACHE_SIZE = 256;
const PARSED_CACHE_MAX_CHARS = 8192;
const parsed = new Map<string, VerbDocument>();

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as object)) deepFreeze(x);
  }
  return v;
}

function parseVerbDocumentText(xml: string): VerbDocument {
  if (typeof xml !== 'string') throw new VerbDocumentError(['the verb document is not text']);
  const bytes = Buffer.byteLength(xml, 'utf8');
  if (bytes > MAX_DOCUMENT_BYTES) {
    throw new VerbDocumentError([`the document is ${bytes} bytes; the limit is ${MAX_DOCUMENT_BYTES}`]);
  }
  if (xml.trim() === '') throw new VerbDocumentError(['the document is empty; expected <Response>']);
  const doctype = /<!DOCTYPE|<!ENTITY/i.exec(xml);
  if (doctype !== null) {
    const line = lineOfOffset(xml, doctype.index);
    throw new VerbDocumentError(
      [`line ${line}: DOCTYPE and entity declarations are not allowed in a verb document`],
      line,
    );
  }

  let doc: Document;
  try {
    doc = libxmljs.parseXml(xml, SAFE_PARSER_OPTIONS);
  } catch (err) {
    const e = err as { message?: string; line?: number | null };
    const p = new Problems();
    p.add(e.line, `not well-formed XML: ${String(e.message ?? err).trim()}`);
    p.throwIfAny();
    throw err; // unreachable: throwIfAny threw
  }
  const syntax = new Problems();
  for (const e of doc.errors) {
    // level 1 is a warning; 2 and 3 are errors libxml recovered from, which we do not accept.
    if ((e.level ?? 2) >= 2) syntax.add(e.line, `not well-formed XML: ${e.message.trim()}`);
  }
  syntax.throwIfAny();

  if (!doc.validate(verbSchema())) {
    const p = new Problems();
    for (const e of doc.validationErrors) p.add(e.line, explainValidationMessage(e.message));
    if (p.list.length === 0) p.add(undefined, 'the document does not match the verb schema');
    p.throwIfAny();
  }

  const root = doc.root();
  if (root === null) throw new VerbDocumentError(['the document has no root element; expected <Response>']);
  const problems = new Problems();
  const verbs: Verb[] = [];
  for (const node of root.childNodes()) {
    if (node.type() !== 'element') continue;
    const verb = toVerb(node as Element, problems);
    if (verb !== undefined) verbs.push(verb);
  }
  const reject = verbs.findIndex((v) => v.verb === 'Reject');
  if (reject > 0) {
    // Reject refuses a call that is still ringing; after any verb before it the call may be answered already.
    problems.add(verbs[reject]!.line, 'Reject must be the first verb of the document (it refuses an unanswered call)');
  }
  const customPayload = responsePayload(root, problems);
  problems.throwIfAny();
  const ignored = findIgnoredAttributes(root);
  return {
    verbs,
    ...(customPayload === undefined ? {} : { customPayload }),
    ...(ignored.length === 0 ? {} : { ignoredAttributes: ignored }),
  };
}

/** The Response's customPayload attribute: JSON text that must be an object (the spec types it as one). */
function responsePayload(root: Element, problems: Problems): Record<string, unknown> | undefined {
  const raw = attr(root, 'customPayload');
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    problems.add(root.line(), `Response customPayload is not valid JSON: ${(err as Error).message}`);
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    problems.add(root.line(), 'Response customPayload must be a JSON object, such as {"ticket":42}');
    return undefined;
  }
  return value as Record<string, unknown>;
}

function toVerb(el: Element, problems: Problems): Verb | undefined {
  const line = el.line();
  const name = el.name();
  switch (name) {
    case 'Say': {
      const markup = hasSsml(el);
      const text = markup ? sayText(el) : ownText(el);
      if (text === '') problems.add(line, 'Say has no text to speak');
      if (text.length > MAX_SAY_CHARS) {
        problems.add(line, `Say text is ${text.length} characters; the limit is ${MAX_SAY_CHARS}`);
      }
      const ssml = markup ? sayToSsml(el) : undefined;
      if (ssml !== undefined && ssml.length > MAX_SAY_SSML_CHARS) {
        problems.add(line, `Say SSML is ${ssml.length} characters as spoken; the limit is ${MAX_SAY_SSML_CHARS}`);
      }
      const voice = attr(el, 'voice')?.trim();
      const language = attr(el, 'language')?.trim();
      return {
        verb: 'Say',
        line,
        text,
        ...(ssml === undefined ? {} : { ssml }),
        ...(voice === undefined ? {} : { voice }),
        ...(language === undefined ? {} : { language }),
        ...loopOf(el, DEFAULTS.Say.loop),
      };
    }
    case 'Play': {
      const source = playSource(el, line, problems);
      return source === undefined ? undefined : { verb: 'Play', line, source, ...loopOf(el, DEFAULTS.Play.loop) };
    }
    case 'Dial': {
      const targets = dialTargets(el, line, problems);
      const callerId = attr(el, 'callerId')?.trim();
      if (targets === undefined) return undefined;
      return {
        verb: 'Dial',
        line,
        target: targets[0]!,
        targets,
        sequential: boolAttr(el, 'sequential', false),
        ...optionalAction(el, line, problems),
        method: 'POST',
        timeout: intAttr(el, 'timeout', DEFAULTS.Dial.timeout),
        ...(callerId === undefined ? {} : { callerId }),
        timeLimit: intAttr(el, 'timeLimit', DEFAULTS.Dial.timeLimit),
        record: (attr(el, 'record') ?? DEFAULTS.Dial.record) as DialRecordMode,
      };
    }
    case 'Record':
      return {
        verb: 'Record',
        line,
        ...optionalAction(el, line, problems),
        method: 'POST',
        maxLength: intAttr(el, 'maxLength', DEFAULTS.Record.maxLength),
        timeout: intAttr(el, 'timeout', DEFAULTS.Record.timeout),
        finishOnKey: attr(el, 'finishOnKey') ?? DEFAULTS.Record.finishOnKey,
        playBeep: boolAttr(el, 'playBeep', DEFAULTS.Record.playBeep),
      };
    case 'RecordSession': {
      const maxLength = optIntAttr(el, 'maxLength');
      return {
        verb: 'RecordSession',
        line,
        channels: (attr(el, 'channels') ?? DEFAULTS.RecordSession.channels) as 'mono' | 'dual',
        ...(maxLength === undefined ? {} : { maxLength }),
      };
    }
    case 'Redirect': {
      const text = ownText(el);
      if (text === '') {
        problems.add(line, 'Redirect has no URL; put the absolute URL as its text');
        return undefined;
      }
      const url = absoluteHttpUrl(text, 'Redirect URL', line, problems);
      return url === undefined ? undefined : { verb: 'Redirect', line, url, method: 'POST' };
    }
    case 'Pause':
      return { verb: 'Pause', line, length: intAttr(el, 'length', DEFAULTS.Pause.length) };
    case 'Hangup':
      return { verb: 'Hangup', line };
    case 'Gather':
      return gatherVerb(el, line, problems, toVerb);
    case 'Reject':
      return { verb: 'Reject', line, reason: (attr(el, 'reason') ?? DEFAULTS.Reject.reason) as 'busy' | 'rejected' };
    case 'Enqueue':
    case 'Start':
    case 'Stop':
    case 'Connect':
      return liveVerb(el, line, problems);
    default:
      // The schema already refused it; kept so a schema edit cannot silently let a verb through untyped.
      problems.add(line, `Element '${name}' is not a verb; expected one of ${VERB_NAMES.join(', ')}`);
      return undefined;
  }
}

/** Play takes exactly one of: a URL as its text, or an `asset` attribute naming an account asset. */
function playSource(el: Element, line: number, problems: Problems): PlaySource | undefined {
  const text = ownText(el);
  const asset = attr(el, 'asset')?.trim();
  if (text !== '' && asset !== undefined) {
    problems.add(line, 'Play has both a URL and an asset; give exactly one');
    return undefined;
  }
  if (asset !== undefined) return { kind: 'asset', name: asset };
  if (text === '') {
    problems.add(line, 'Play needs a URL as its text or an asset attribute');
    return undefined;
  }
  const url = absoluteHttpUrl(text, 'Play URL', line, problems);
  return url === undefined ? undefined : { kind: 'url', url };
}

/** A number as people write it (the XSD's DialledNumber); read into E.164 with the account's country when dialled. */
const DIALLED = /^\+?[0-9][0-9 .()-]{1,31}$/;

/** Dial's targets: its own text (a phone number), or up to 10 <Number> / <Extension> nouns (the XSD's bound). */
function dialTargets(el: Element, line: number, problems: Problems): DialTarget[] | undefined {
  const text = ownText(el);
  const children = el.childNodes().filter((n) => n.type() === 'element') as Element[];
  if (text !== '' && children.length > 0) {
    problems.add(line, `Dial has both text '${text}' and a <${children[0]!.name()}>; give exactly one target`);
    return undefined;
  }
  const conference = conferenceTarget(children, line, problems);
  if (conference !== undefined) return [conference];
  if (children.length > 0) {
    return children.map((child) => {
      const value = child.text().trim();
      if (child.name() === 'Queue') return { kind: 'queue', queue: value };
      if (child.name() !== 'Number') return { kind: 'extension', extension: value };
      const machineDetection = numberMachineDetection(child, problems);
      return { kind: 'number', number: value, ...(machineDetection ? { machineDetection } : {}) };
    });
  }
  if (text === '') {
    problems.add(line, 'Dial has no target; give an E.164 number as text, a <Number> or an <Extension>');
    return undefined;
  }
  if (!DIALLED.test(text)) {
    problems.add(line, `Dial text '${text}' is not a phone number such as +254700000001 or 0700 000001`);
    return undefined;
  }
  return [{ kind: 'number', number: text }];
}

/**
 * A <Number>'s answering machine detection from TwiML's attributes (ranges checked by the schema); the tuning
 * attributes and amdStatusCallback mean nothing without machineDetection and are then ignored, as TwiML does.
 */
function numberMachineDetection(el: Element, problems: Problems): NumberMachineDetection | undefined {
  const mode = attr(el, 'machineDetection') as NumberMachineDetection['mode'] | undefined;
  if (mode === undefined) return undefined;
  const timeout = optIntAttr(el, 'machineDetectionTimeout');
  const greetingMs = optIntAttr(el, 'machineDetectionSpeechThreshold');
  const endSilenceMs = optIntAttr(el, 'machineDetectionSpeechEndThreshold');
  const initialSilenceMs = optIntAttr(el, 'machineDetectionSilenceTimeout');
  const rawCallback = attr(el, 'amdStatusCallback');
  const statusCallback =
    rawCallback === undefined
      ? undefined
      : absoluteHttpUrl(rawCallback, 'Number amdStatusCallback', el.line(), problems);
  return {
    mode,
    ...(timeout === undefined ? {} : { timeoutMs: timeout * 1000 }),
    ...(greetingMs === undefined ? {} : { greetingMs }),
    ...(endSilenceMs === undefined ? {} : { endSilenceMs }),
    ...(initialSilenceMs === undefined ? {} : { initialSilenceMs }),
    ...(statusCallback === undefined ? {} : { statusCallback }),
  };
}
