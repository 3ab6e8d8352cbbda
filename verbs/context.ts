/**
 * What a verb needs from the call it runs on. The calls room implements VerbContext over media (Say, Play,
 * Record, RecordSession), sip (Dial), fetch.ts (next documents) and events (emit); tests use a fake.
 *
 * Every long operation takes an AbortSignal: Interpreter.kill() aborts it and the operation must settle
 * promptly (resolve or reject, either is fine; the interpreter ignores the outcome of a killed verb).
 * Time is the context's business too (Pause), so the interpreter has no timers of its own.
 */
import type { EventCodes } from '../events/index.js';
import type { LiveVerbContext } from './context-live.js';
import type { ActionCallbackExtras, DialCallStatus } from './fetch.js';
import type { DialRecordMode, DialTarget, PlaySource, VerbDocument } from './types.js';

export interface SayOptions {
  readonly voice?: string;
  readonly language?: string;
  /** SSML to speak instead of the text (SayVerb.ssml). */
  readonly ssml?: string;
  readonly signal: AbortSignal;
}

/**
 * `asset_missing`: the named asset is absent, inactive or has no playable audio, or the URL's body could not be
 * fetched or is not audio (spec PLAY.0404).
 */
export type PlayResult = 'played' | 'asset_missing';

export interface DialOptions {
  readonly timeout: number;
  readonly callerId?: string;
  readonly timeLimit: number;
  readonly record: DialRecordMode;
  readonly signal: AbortSignal;
  /** Every target of the Dial when it has several (the first is `dial`'s own target); rung at once unless `sequential`. */
  readonly targets?: readonly DialTarget[];
  readonly sequential?: boolean;
  /**
   * Nothing runs after this Dial (the document's last verb, no action): when it ends, the call ends. The caller's
   * media then stays where the bridge left it instead of returning to the platform (one rtpengine offer and answer
   * less per call), unless the Dial was interrupted (a redirect brings new verbs).
   */
  readonly endsCall?: boolean;
}

export interface DialResult {
  readonly status: DialCallStatus;
  /** Seconds the dialled leg was connected; 0 unless answered. */
  readonly durationSeconds: number;
}

export interface RecordOptions {
  readonly maxLength: number;
  readonly timeout: number;
  readonly finishOnKey: string;
  readonly playBeep: boolean;
  readonly signal: AbortSignal;
}

export interface RecordResult {
  /** Seconds of audio captured; 0 when the caller said nothing. */
  readonly durationSeconds: number;
  /**
   * Storage reference of the recording (RecordingPath): the Recording's uuid, as POST /api/recordings/download
   * takes it; never a server path. Absent when nothing was recorded.
   */
  readonly path?: string;
}

export interface SessionRecordingOptions {
  readonly channels: 'mono' | 'dual';
  readonly maxLength?: number;
}

/** How a Gather listens (verbs/verbs/gather.ts builds it from the verb). */
export interface GatherOptions {
  readonly dtmf: boolean;
  readonly speech: boolean;
  readonly numDigits?: number;
  /** A key that submits (not part of the digits); empty: none. */
  readonly finishOnKey: string;
  /** Seconds of no input after the prompts end, or after the last key, that end the Gather. */
  readonly timeoutSeconds: number;
  readonly hints: readonly string[];
  /**
   * Plays the nested prompts. `bargeIn` aborts at the first input (a key, or speech starting): the prompt playing
   * must stop at once, and the rest are skipped.
   */
  readonly prompts: (bargeIn: AbortSignal) => Promise<void>;
  /** Called once listening starts (after a ringing call is answered), before the prompts. */
  readonly onListening?: () => void;
  readonly signal: AbortSignal;
}

/** Why a Gather stopped listening. */
export type GatherEnd = 'num_digits' | 'finish_key' | 'timeout' | 'speech' | 'stopped';

export interface GatherResult {
  /** The keys pressed, in order, without the finishOnKey key; '' when none. */
  readonly digits: string;
  /** What the recogniser heard, when speech was asked for and something was recognised. */
  readonly speech?: { readonly text: string; readonly confidence: number };
  readonly end: GatherEnd;
}

/** The account's fallback policy (spec, "Webhook configuration" and "Fallback"). */
export interface FallbackPolicy {
  readonly mode: 'message' | 'play' | 'drop';
  /** Text for `message`, audio URL for `play`. */
  readonly value: string;
  /** The TTS language of a `message` (the account's language); absent: the default voice. */
  readonly language?: string;
}

/** Events the verbs room raises itself; codes from the spec's event catalogue. */
export type VerbEvent =
  | {
      readonly code: typeof EventCodes.webhookFailed;
      readonly event: 'webhook.failed';
      readonly data: {
        readonly url: string;
        readonly reason: string;
        readonly status?: number;
        readonly fallback: FallbackPolicy['mode'];
      };
    }
  | {
      readonly code: typeof EventCodes.playAssetMissing;
      readonly event: 'play.asset_missing';
      /** `asset` for `<Play asset>`; `url` for a URL that could not be fetched or is not audio we decode. */
      readonly data: { readonly asset: string } | { readonly url: string };
    }
  | {
      /** Beyond the spec (docs/api.md): a Gather began listening. */
      readonly code: typeof EventCodes.gatherStarted;
      readonly event: 'gather.started';
      readonly data: { readonly input: string; readonly numDigits?: number; readonly timeout: number };
    }
  | {
      /** Beyond the spec (docs/api.md): a Gather ended, with what it heard. */
      readonly code: typeof EventCodes.gatherCompleted;
      readonly event: 'gather.completed';
      readonly data: {
        readonly digits: string;
        readonly speechResult?: string;
        readonly confidence?: number;
        readonly end: GatherEnd;
      };
    }
  | {
      /** Beyond the spec (docs/api.md): an attribute Simu does not know was ignored; once per call and pair. */
      readonly code: typeof EventCodes.verbAttributeIgnored;
      readonly event: 'verb.attribute_ignored';
      readonly data: { readonly element: string; readonly attribute: string; readonly line: number };
    };

/**
 * Why the interpreter hangs up: a Hangup verb, the end of a document, the fallback after a failed fetch, a loop
 * of Redirects, or a context operation that threw.
 */
export type HangupCause = 'verb' | 'end_of_document' | 'fallback' | 'redirect_limit' | 'error';

export interface VerbContext extends LiveVerbContext {
  say(text: string, options: SayOptions): Promise<void>;
  play(source: PlaySource, options: { readonly signal: AbortSignal }): Promise<PlayResult>;
  /**
   * Places the second leg and bridges it; resolves when the dialled leg ends (or never answered). Checks that
   * belong to the call (callerId is a DID of the account, the outbound allowlist, an extension of the same
   * account) are the implementation's: a blocked Dial emits DIAL.0403 there and resolves with `failed`.
   */
  dial(target: DialTarget, options: DialOptions): Promise<DialResult>;
  record(options: RecordOptions): Promise<RecordResult>;
  /** Starts recording both directions for the rest of the call and returns at once. */
  startSessionRecording(options: SessionRecordingOptions): Promise<void>;
  pause(seconds: number, options: { readonly signal: AbortSignal }): Promise<void>;
  /**
   * Gather: plays the prompts and listens for keys (every source the call has: RFC 4733, SIP INFO, in-band tones)
   * and, when asked and a recogniser exists, speech. Answers a ringing caller first. Never rejects for "no input".
   */
  gather(options: GatherOptions): Promise<GatherResult>;
  /** The call is an inbound call still ringing, so a Reject can refuse it (486/603, never answered, not billed). */
  canReject(): boolean;
  /** Refuses the ringing call with 486 (`busy`) or 603 (`rejected`) and ends it as failed; does not wait. */
  reject(reason: 'busy' | 'rejected'): Promise<void>;
  /**
   * Ends the call (BYE or CANCEL as the call's state needs). `cause` says why the interpreter hangs up: a call
   * not answered yet is refused with a SIP status that says it (docs/api.md, "Inbound calls").
   */
  hangup(cause?: HangupCause): Promise<void>;
  /**
   * Signed POST of the call-control fields plus `extras` to `url`; resolves with the next document or rejects
   * with WebhookFetchError. Normally fetchVerbDocument(buildCallControlFields(call, extras)).
   */
  fetchDocument(
    url: string,
    extras: ActionCallbackExtras,
    options: { readonly signal: AbortSignal },
  ): Promise<VerbDocument>;
  /**
   * A document carried `<Response customPayload='{...}'>`: attach it to the call, so that events, the call
   * record and later call-control requests carry it (spec: "For inbound calls the verb document itself sets it").
   */
  setCustomPayload(payload: Readonly<Record<string, unknown>>): Promise<void>;
  emit(event: VerbEvent): void;
  readonly fallback: FallbackPolicy;
}
