/**
 * Parsing the verbs of types-live.ts (queues and media streams) once the schema has validated the element. The
 * rules XSD 1.0 cannot say are checked here: absolute http(s) URLs for waitUrl and action, ws(s) for a Stream URL,
 * exactly one <Stream> in Start and Connect, unique <Parameter> names.
 */
import type { Element } from 'libxmljs2';
import { Problems, absoluteHttpUrl, attr, intAttr, optionalAction, ownText } from './parse-element.js';
import {
  MAX_QUEUE_NAME,
  MAX_STREAM_PARAMETERS,
  type LiveVerb,
  type StreamNoun,
  type StreamTrackName,
} from './types-live.js';

/** Default most callers one queue holds (Twilio's default max size is 100). */
export const DEFAULT_QUEUE_MAX_SIZE = 100;

function children(el: Element): Element[] {
  return el.childNodes().filter((n) => n.type() === 'element') as Element[];
}

/** A verb of types-live.ts, or undefined when `el` is none of them (or is invalid: `problems` says why). */
export function liveVerb(el: Element, line: number, problems: Problems): LiveVerb | undefined {
  switch (el.name()) {
    case 'Enqueue': {
      const name = ownText(el);
      if (name === '') problems.add(line, 'Enqueue has no queue name; put the name as its text');
      if (name.length > MAX_QUEUE_NAME) {
        problems.add(line, `Enqueue queue name is ${name.length} characters; the limit is ${MAX_QUEUE_NAME}`);
      }
      const rawWait = attr(el, 'waitUrl');
      const waitUrl = rawWait === undefined ? undefined : absoluteHttpUrl(rawWait, 'Enqueue waitUrl', line, problems);
      return {
        verb: 'Enqueue',
        line,
        name,
        ...(waitUrl === undefined ? {} : { waitUrl }),
        ...optionalAction(el, line, problems),
        method: 'POST',
        maxSize: intAttr(el, 'maxSize', DEFAULT_QUEUE_MAX_SIZE),
      };
    }
    case 'Start':
    case 'Connect': {
      const nouns = children(el);
      if (nouns.length !== 1 || nouns[0]!.name() !== 'Stream') {
        problems.add(line, `${el.name()} takes exactly one <Stream>`);
        return undefined;
      }
      const stream = streamNoun(nouns[0]!, problems);
      if (stream === undefined) return undefined;
      if (el.name() === 'Start') return { verb: 'Start', line, stream };
      return { verb: 'Connect', line, stream, ...optionalAction(el, line, problems), method: 'POST' };
    }
    case 'Stop': {
      const nouns = children(el);
      const name = nouns[0] === undefined ? undefined : attr(nouns[0], 'name')?.trim();
      return { verb: 'Stop', line, ...(name === undefined || name === '' ? {} : { name }) };
    }
    default:
      return undefined;
  }
}

function streamNoun(el: Element, problems: Problems): StreamNoun | undefined {
  const line = el.line();
  const raw = (attr(el, 'url') ?? '').trim();
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'wss:' && url.protocol !== 'ws:')) {
    problems.add(line, `Stream url '${raw}' is not an absolute ws:// or wss:// URL`);
    return undefined;
  }
  const parameters: Record<string, string> = {};
  const params = children(el);
  if (params.length > MAX_STREAM_PARAMETERS) {
    problems.add(line, `Stream has ${params.length} <Parameter>s; the limit is ${MAX_STREAM_PARAMETERS}`);
  }
  for (const p of params) {
    const name = attr(p, 'name') ?? '';
    if (Object.hasOwn(parameters, name)) problems.add(p.line(), `Parameter '${name}' is given twice`);
    parameters[name] = attr(p, 'value') ?? '';
  }
  const name = attr(el, 'name')?.trim();
  return {
    url: raw,
    ...(name === undefined || name === '' ? {} : { name }),
    track: (attr(el, 'track') ?? 'inbound_track') as StreamTrackName,
    parameters,
  };
}
