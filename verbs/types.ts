/**
 * The parsed verb document: what verbs/parse.ts returns and the interpreter runs. Every default is applied
 * (see DEFAULTS), numbers are numbers and booleans are booleans, so a verb never re-reads XML.
 */
import type { IgnoredAttribute } from './ignored-attributes.js';
import { LIVE_VERB_NAMES, type LiveVerb, type LiveVerbName } from './types-live.js';
import type { ConferenceNoun } from './types-conference.js';

/** Largest repeat count for Say/Play. `loop="0"` ("until interrupted", as in TwiML) becomes this count. */
export const MAX_LOOP = 1000;

/** Defaults of every optional attribute; they mirror the `default=` values in simu-verbs.xsd. */
export const DEFAULTS = {
  Say: { loop: 1 },
  Play: { loop: 1 },
  Dial: { method: 'POST', timeout: 30, timeLimit: 14400, record: 'do-not-record' },
  Record: { method: 'POST', maxLength: 3600, timeout: 5, finishOnKey: '1234567890*#', playBeep: true },
  RecordSession: { channels: 'dual' },
  Redirect: { method: 'POST' },
  Pause: { length: 1 },
  Gather: { method: 'POST', input: 'dtmf', finishOnKey: '#', timeout: 5, actionOnEmptyResult: false },
  Reject: { reason: 'rejected' },
} as const;

/** Most keys one Gather collects when it has no numDigits: a caller leaning on a key cannot grow it unbounded. */
export const MAX_GATHER_DIGITS = 64;
/** Most hints one Gather passes to a speech recogniser. */
export const MAX_GATHER_HINTS = 100;

export type VerbName =
  | 'Say'
  | 'Play'
  | 'Dial'
  | 'Record'
  | 'RecordSession'
  | 'Redirect'
  | 'Pause'
  | 'Hangup'
  | 'Gather'
  | 'Reject'
  | LiveVerbName;

export const VERB_NAMES: readonly VerbName[] = [
  'Say',
  'Play',
  'Dial',
  'Record',
  'RecordSession',
  'Redirect',
  'Pause',
  'Hangup',
  'Gather',
  'Reject',
  ...LIVE_VERB_NAMES,
];

/** Only POST: every request the service sends is a signed JSON POST (spec, "Webhooks sent by the service"). */
export type WebhookMethod = 'POST';

interface VerbBase {
  /** 1-based line of the element in the document, for logs and error reports. */
  readonly line: number;
}

export interface SayVerb extends VerbBase {
  readonly verb: 'Say';
  /** What is spoken, as plain text (every SSML element's text, for limits and logs). */
  readonly text: string;
  /** The Say's SSML as espeak-ng is to read it (verbs/ssml.ts), when the Say had child elements. */
  readonly ssml?: string;
  readonly voice?: string;
  readonly language?: string;
  /** Times to speak, 1..MAX_LOOP. `loop="0"` in the document is MAX_LOOP here. */
  readonly loop: number;
  /** True when the document said `loop="0"`: repeat until the verb is interrupted. */
  readonly untilInterrupted: boolean;
}

export type PlaySource =
  { readonly kind: 'url'; readonly url: string } | { readonly kind: 'asset'; readonly name: string };

export interface PlayVerb extends VerbBase {
  readonly verb: 'Play';
  readonly source: PlaySource;
  readonly loop: number;
  readonly untilInterrupted: boolean;
}

/** PSTN number in E.164, or an on-net extension of the same account (an end-user's `extension_number`). */
/**
 * A <Number>'s answering machine detection (TwiML's attributes): the dialled leg is bridged at once and its audio
 * heard on a copy; the verdict goes to `statusCallback` and AMD.0200 of the leg. Absent tuning: the detector's
 * defaults.
 */
export interface NumberMachineDetection {
  readonly mode: 'Enable' | 'DetectMessageEnd';
  /** machineDetectionTimeout, in ms. */
  readonly timeoutMs?: number;
  /** machineDetectionSpeechThreshold: this much voice is a machine's greeting. */
  readonly greetingMs?: number;
  /** machineDetectionSpeechEndThreshold: silence that ends a machine's greeting. */
  readonly endSilenceMs?: number;
  /** machineDetectionSilenceTimeout: silence from the answer this long is `unknown`. */
  readonly initialSilenceMs?: number;
  /** amdStatusCallback: where the signed verdict is POSTed. */
  readonly statusCallback?: string;
}

export type DialTarget =
  | { readonly kind: 'number'; readonly number: string; readonly machineDetection?: NumberMachineDetection }
  | { readonly kind: 'extension'; readonly extension: string }
  /** <Queue>: the longest-waiting caller of the account's queue of that name (calls/queue/). */
  | { readonly kind: 'queue'; readonly queue: string }
  /** <Conference>: join the account's conference of that name (calls/conference/); the Dial's only noun. */
  | { readonly kind: 'conference'; readonly conference: ConferenceNoun };

export type DialRecordMode =
  | 'do-not-record'
  | 'record-from-answer'
  | 'record-from-ringing'
  | 'record-from-answer-dual'
  | 'record-from-ringing-dual';

export interface DialVerb extends VerbBase {
  readonly verb: 'Dial';
  /** The first of `targets` (the only one of a Dial with one noun). */
  readonly target: DialTarget;
  /** Every noun, in document order (at most 10): rung at once, or one after another when `sequential`. */
  readonly targets: readonly DialTarget[];
  /** Beyond the spec: try the targets in order, each for `timeout` seconds, until one answers. */
  readonly sequential: boolean;
  readonly action?: string;
  readonly method: WebhookMethod;
  /** Seconds to wait for an answer. */
  readonly timeout: number;
  /** E.164 caller ID to present; absent means the call's own number. */
  readonly callerId?: string;
  /** Longest the bridged leg may last, in seconds. */
  readonly timeLimit: number;
  readonly record: DialRecordMode;
}

export interface RecordVerb extends VerbBase {
  readonly verb: 'Record';
  readonly action?: string;
  readonly method: WebhookMethod;
  /** Longest recording, seconds. */
  readonly maxLength: number;
  /** Seconds of silence that end the recording; 0 disables silence detection. */
  readonly timeout: number;
  /** DTMF keys that end the recording; empty means none. */
  readonly finishOnKey: string;
  readonly playBeep: boolean;
}

export interface RecordSessionVerb extends VerbBase {
  readonly verb: 'RecordSession';
  /** `dual`: each direction on its own channel; `mono`: both directions mixed. */
  readonly channels: 'mono' | 'dual';
  /** Stop after this many seconds; absent means until the call ends. */
  readonly maxLength?: number;
}

export interface RedirectVerb extends VerbBase {
  readonly verb: 'Redirect';
  readonly url: string;
  readonly method: WebhookMethod;
}

export interface PauseVerb extends VerbBase {
  readonly verb: 'Pause';
  /** Seconds. */
  readonly length: number;
}

export interface HangupVerb extends VerbBase {
  readonly verb: 'Hangup';
}

/** What a Gather plays while it listens: its nested Say, Play and Pause, barged in on by the first input. */
export type GatherPrompt = SayVerb | PlayVerb | PauseVerb;

export interface GatherVerb extends VerbBase {
  readonly verb: 'Gather';
  /** `input="dtmf"`, `"speech"` or both (`"dtmf speech"`). */
  readonly dtmf: boolean;
  readonly speech: boolean;
  /** Stop once this many keys are in; absent means until finishOnKey or the timeout (MAX_GATHER_DIGITS at most). */
  readonly numDigits?: number;
  /** The key that submits what was typed (not part of Digits); empty means none. */
  readonly finishOnKey: string;
  /** Seconds of no input after the prompts, or after the last key, that end the Gather. */
  readonly timeout: number;
  readonly action?: string;
  readonly method: WebhookMethod;
  /** Request the action even when nothing was heard (with empty Digits) instead of going on with the next verb. */
  readonly actionOnEmptyResult: boolean;
  /** Words or phrases the speech recogniser should expect (`hints="sales, support"`). */
  readonly hints: readonly string[];
  readonly prompts: readonly GatherPrompt[];
}

export interface RejectVerb extends VerbBase {
  readonly verb: 'Reject';
  /** `busy`: 486 Busy Here; `rejected`: 603 Decline. */
  readonly reason: 'busy' | 'rejected';
}

export type Verb =
  | SayVerb
  | PlayVerb
  | DialVerb
  | RecordVerb
  | RecordSessionVerb
  | RedirectVerb
  | PauseVerb
  | HangupVerb
  | GatherVerb
  | RejectVerb
  | LiveVerb;

export interface VerbDocument {
  readonly verbs: readonly Verb[];
  /**
   * `<Response customPayload='{...}'>`: metadata the document attaches to the call (spec: "For inbound calls
   * the verb document itself sets it"). A JSON object; absent when the attribute is.
   */
  readonly customPayload?: Readonly<Record<string, unknown>>;
  /**
   * Attributes of the document Simu does not know and ignored (verbs/ignored-attributes.ts), one per (element,
   * attribute); absent when there are none. The interpreter reports each once per call (VERB.0299).
   */
  readonly ignoredAttributes?: readonly IgnoredAttribute[];
}
