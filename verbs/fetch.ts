/**
 * The signed call-control request (spec, "Webhooks sent by the service to the account's server"): POST the
 * call-control fields as canonical JSON, signed; the reply must be HTTP 200 carrying a valid verb document
 * within the deadline (10 s by default, spec "Limits"). Anything else is a WebhookFetchError whose `reason`
 * lets the interpreter run the account's fallback and emit WH.0400.
 */
import { VerbDocumentError, WebhookFetchError } from './errors.js';
import { MAX_DOCUMENT_BYTES, parseVerbDocument } from './parse.js';
import { canonicalJson, signWebhook } from '../events/index.js';
import {
  OutboundUrlError,
  ReplyTooLargeError,
  UrlPolicy,
  guardedRequest,
  requestUrl,
  type GuardedReply,
  type ReplyHeaders,
  systemClock,
  TIMED_OUT,
  type Clock,
} from '../kit/index.js';
import type { VerbDocument } from './types.js';

/** The end-user behind a browser- or mobile-phone originated call (spec: `endUser`). */
export interface CallControlEndUser {
  readonly uuid: string;
  readonly email: string;
  readonly display_name: string;
  readonly extension_number: string;
}

/** What the verbs room needs to know about a call to describe it to the account's server. */
export interface CallControlCall {
  readonly sid: string;
  readonly accountUuid: string;
  /** Call-control requests only exist for PSTN-facing calls; `internal` calls never reach a webhook. */
  readonly direction: 'inbound' | 'outbound';
  readonly from: string;
  readonly to: string;
  /** Metadata attached at origination (or set by a verb document); null or absent means none. */
  readonly customPayload?: unknown;
  /** Set only when an end-user's phone originated the call. */
  readonly endUser?: CallControlEndUser | null;
  /** Answering machine detection's verdict and its duration (ms), once decided on a call that asked for it. */
  readonly answeredBy?: string | null;
  readonly machineDetectionDurationMs?: number | null;
}

export type DialCallStatus = 'completed' | 'busy' | 'no-answer' | 'failed';

/** Extra fields of action callbacks (spec, "Action callbacks"). Redirect sends none. */
export interface ActionCallbackExtras {
  readonly DialCallStatus?: DialCallStatus;
  readonly DialCallDuration?: number;
  readonly RecordingDuration?: number;
  readonly RecordingPath?: string;
  /** Gather: the keys pressed ('' when actionOnEmptyResult sent an empty result). */
  readonly Digits?: string;
  /** Gather with speech: what was recognised and how sure the recogniser is (0..1). */
  readonly SpeechResult?: string;
  readonly Confidence?: number;
  /** Enqueue's action: how the caller left the queue, and its seconds in it (verbs/context-live.ts). */
  readonly QueueResult?: string;
  readonly QueueTime?: number;
  /** Enqueue's waitUrl requests: the caller's place (1 = next), the queue's size and its average wait. */
  readonly QueuePosition?: number;
  readonly CurrentQueueSize?: number;
  readonly AvgQueueTime?: number;
  /** Connect's action: the stream that ended. */
  readonly StreamSid?: string;
}

export interface CallControlFields extends ActionCallbackExtras {
  readonly CallSid: string;
  readonly AccountSid: string;
  readonly Direction: 'inbound' | 'outbound';
  readonly From: string;
  readonly To: string;
  readonly CallStatus: 'ringing' | 'in-progress';
  /** JSON-encoded string of the call's custom payload; present only when one is set. */
  readonly customPayload?: string;
  readonly endUser?: CallControlEndUser;
  /** Twilio's fields for answering machine detection (beyond the spec): sent once the call has a verdict. */
  readonly AnsweredBy?: string;
  readonly MachineDetectionDuration?: number;
}

/** Exactly the spec's call-control fields for `call`, plus action-callback extras. */
export function buildCallControlFields(call: CallControlCall, extras: ActionCallbackExtras = {}): CallControlFields {
  const fields: Record<string, unknown> = {
    CallSid: call.sid,
    AccountSid: call.accountUuid,
    Direction: call.direction,
    From: call.from,
    To: call.to,
    // Spec: `ringing` on inbound (the call is offered to the account's server before answer), `in-progress` on
    // outbound (verbs are fetched once the far end answered).
    CallStatus: call.direction === 'inbound' ? 'ringing' : 'in-progress',
  };
  if (call.customPayload !== undefined && call.customPayload !== null) {
    fields.customPayload = canonicalJson(call.customPayload);
  }
  if (call.direction === 'outbound' && call.endUser !== undefined && call.endUser !== null) {
    const { uuid, email, display_name, extension_number } = call.endUser;
    fields.endUser = { uuid, email, display_name, extension_number };
  }
  if (call.answeredBy) {
    fields.AnsweredBy = call.answeredBy;
    fields.MachineDetectionDuration = call.machineDetectionDurationMs ?? 0;
  }
  const keys = [
    'DialCallStatus',
    'DialCallDuration',
    'RecordingDuration',
    'RecordingPath',
    'Digits',
    'SpeechResult',
    'Confidence',
    'QueueResult',
    'QueueTime',
    'QueuePosition',
    'CurrentQueueSize',
    'AvgQueueTime',
    'StreamSid',
  ] as const;
  for (const key of keys) {
    if (extras[key] !== undefined) fields[key] = extras[key];
  }
  return fields as unknown as CallControlFields;
}

export interface FetchVerbDocumentOptions {
  readonly url: string;
  readonly fields: CallControlFields;
  /** The account's signing secret. */
  readonly secret: string;
  /** Whole-exchange deadline: connect, headers and body. Spec: 10 seconds. */
  readonly timeoutMs?: number;
  /**
   * Where the account's URLs may point (SSRF): the host is resolved and every address checked before
   * connecting. Default: public destinations only.
   */
  readonly urlPolicy?: UrlPolicy;
  /** The clock (milliseconds since the epoch) for the X-Voice-Timestamp header. */
  readonly clock?: Pick<Clock, 'now'>;
  /** Aborts the request (the call ended); the promise then rejects with reason `aborted`. */
  readonly signal?: AbortSignal;
  /** Told the document's text and reply headers once it parsed (the last known good document). */
  readonly onSource?: (xml: string, headers: ReplyHeaders) => void;
}

export const CALL_CONTROL_DEADLINE_MS = 10_000;

/** POSTs the signed call-control request and returns the parsed document, or throws WebhookFetchError. */
export async function fetchVerbDocument(options: FetchVerbDocumentOptions): Promise<VerbDocument> {
  const { fields, secret } = options;
  // The URL as it is requested and signed (kit/request-url.ts): one string for both, so the receiver's rebuild of
  // the request URL verifies whatever spelling the account configured (`HTTPS://Hooks.Example.com`, `:443`, ...).
  const url = requestUrl(options.url);
  const timeoutMs = options.timeoutMs ?? CALL_CONTROL_DEADLINE_MS;
  const policy = options.urlPolicy ?? UrlPolicy.strict;
  const clock = options.clock ?? systemClock;

  const body = canonicalJson(fields);
  const timestamp = String(Math.floor(clock.now() / 1000));
  const headers = {
    'Content-Type': 'application/json',
    'X-Voice-Timestamp': timestamp,
    'X-Voice-Signature': signWebhook(secret, url, timestamp, body),
  };

  const caller = options.signal;
  if (caller?.aborted === true) throw new WebhookFetchError('aborted', url, `request to ${url} aborted`);
  const callerAborted = (): boolean => caller?.aborted === true;
  /** What an abort meant: the caller's signal wins, since then nobody waits for the answer. */
  const aborted = (what: string, err: unknown): WebhookFetchError =>
    callerAborted()
      ? new WebhookFetchError('aborted', url, `request to ${url} aborted`, { cause: err })
      : new WebhookFetchError('timeout', url, `${what} from ${url} within ${timeoutMs} ms`, { cause: err });
  let reply: GuardedReply;
  try {
    // redirect 'manual' (guardedRequest never follows one): a 3xx is an answer that is not 200, so it triggers the
    // fallback (spec) rather than sending the signed body somewhere the account did not configure. The deadline is
    // the request's own timer and the caller's signal ends it too: no signal combining the two per request.
    reply = await guardedRequest(
      url,
      { method: 'POST', headers, body, timeoutMs, maxBytes: MAX_DOCUMENT_BYTES, ...(caller ? { signal: caller } : {}) },
      policy,
    );
  } catch (err) {
    if (err instanceof ReplyTooLargeError && err.status !== 200) {
      throw new WebhookFetchError('http_status', url, `${url} answered HTTP ${err.status}; expected 200`, {
        status: err.status,
      });
    }
    if (err instanceof ReplyTooLargeError) {
      throw new WebhookFetchError(
        'invalid_document',
        url,
        `${url} answered with more than ${MAX_DOCUMENT_BYTES} bytes`,
        {
          status: 200,
          cause: err,
        },
      );
    }
    if (callerAborted() || err === TIMED_OUT) throw aborted('no reply', err);
    throw new WebhookFetchError('network', url, `request to ${url} failed: ${describe(err)}`, { cause: err });
  }
  if (reply.status !== 200) {
    const status = reply.status;
    throw new WebhookFetchError('http_status', url, `${url} answered HTTP ${status}; expected 200`, { status });
  }
  let xml: string;
  try {
    xml = UTF8.decode(reply.body);
  } catch (err) {
    throw new WebhookFetchError('invalid_document', url, `${url} answered with bytes that are not UTF-8`, {
      status: 200,
      cause: err,
    });
  }

  try {
    const document = parseVerbDocument(xml);
    options.onSource?.(xml, reply.headers);
    return document;
  } catch (err) {
    if (err instanceof VerbDocumentError) {
      throw new WebhookFetchError('invalid_document', url, `${url} answered with an ${err.message}`, {
        status: 200,
        cause: err,
      });
    }
    throw err;
  }
}

/** Strict UTF-8: a reply that is not is refused, not patched with replacement characters. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** For the error's message (logs); WH.0400 carries only the reason, so a refused address reads as `network`. */
function describe(err: unknown): string {
  if (err instanceof OutboundUrlError) return `${err.code} (${err.detail})`;
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code !== undefined) return cause.code;
  return err instanceof Error ? err.message : String(err);
}

export interface CallControlFetcherOptions {
  /** Read on every request, so a customPayload set by a document is carried by the requests after it. */
  readonly call: () => CallControlCall;
  readonly secret: string;
  readonly timeoutMs?: number;
  readonly urlPolicy?: UrlPolicy;
  readonly clock?: Pick<Clock, 'now'>;
  readonly onSource?: (xml: string, headers: ReplyHeaders) => void;
}

/** VerbContext.fetchDocument for a live call: fields built from the call, extras added, signed and fetched. */
export function callControlFetcher(
  options: CallControlFetcherOptions,
): (url: string, extras: ActionCallbackExtras, request: { readonly signal: AbortSignal }) => Promise<VerbDocument> {
  return (url, extras, request) =>
    fetchVerbDocument({
      url,
      fields: buildCallControlFields(options.call(), extras),
      secret: options.secret,
      signal: request.signal,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.urlPolicy === undefined ? {} : { urlPolicy: options.urlPolicy }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.onSource === undefined ? {} : { onSource: options.onSource }),
    });
}
