/**
 * Parsing <Conference> inside <Dial> once the schema validated it: the name's length, the beep's four values,
 * an absolute http(s) waitUrl, and that a Conference is the Dial's only noun (a conference is joined, not rung).
 */
import type { Element } from 'libxmljs2';
import { Problems, absoluteHttpUrl, attr, boolAttr, intAttr } from './parse-element.js';
import {
  MAX_CONFERENCE_NAME,
  MAX_CONFERENCE_PARTICIPANTS,
  type ConferenceNoun,
  type ConferenceRecordMode,
} from './types-conference.js';

/**
 * The conference target of a Dial whose nouns are `nouns`: undefined when none is a <Conference> (the Dial
 * rings its nouns), or the one conference (`problems` says when a Conference sits beside other nouns).
 */
export function conferenceTarget(
  nouns: readonly Element[],
  line: number,
  problems: Problems,
): { readonly kind: 'conference'; readonly conference: ConferenceNoun } | undefined {
  const el = nouns.find((n) => n.name() === 'Conference');
  if (el === undefined) return undefined;
  if (nouns.length > 1) problems.add(line, 'Dial with a <Conference> takes no other noun');
  const name = el.text().trim();
  if (name === '') problems.add(line, 'Conference has no name; put the name as its text');
  if (name.length > MAX_CONFERENCE_NAME) {
    problems.add(line, `Conference name is ${name.length} characters; the limit is ${MAX_CONFERENCE_NAME}`);
  }
  const beep = attr(el, 'beep') ?? 'true';
  const rawWait = attr(el, 'waitUrl');
  const waitUrl = rawWait === undefined ? undefined : absoluteHttpUrl(rawWait, 'Conference waitUrl', line, problems);
  return {
    kind: 'conference',
    conference: {
      name,
      startConferenceOnEnter: boolAttr(el, 'startConferenceOnEnter', true),
      endConferenceOnExit: boolAttr(el, 'endConferenceOnExit', false),
      muted: boolAttr(el, 'muted', false),
      beepOnEnter: beep === 'true' || beep === 'onEnter',
      beepOnExit: beep === 'true' || beep === 'onExit',
      ...(waitUrl === undefined ? {} : { waitUrl }),
      maxParticipants: intAttr(el, 'maxParticipants', MAX_CONFERENCE_PARTICIPANTS),
      record: (attr(el, 'record') ?? 'do-not-record') as ConferenceRecordMode,
    },
  };
}
