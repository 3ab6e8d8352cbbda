/**
 * The verbs room: verb documents (parse and validate), the signed call-control request, and the interpreter
 * that runs a document's verbs through a VerbContext the calls room provides.
 *
 * Wiring, per call (calls room):
 *
 *   const ctx: VerbContext = {
 *     say, play, dial, record, startSessionRecording, pause, hangup,   // over media/ and sip/, honour `signal`
 *     setCustomPayload: async (p) => { call.customPayload = p; ... },   // also store it on the call record
 *     fetchDocument: callControlFetcher({ call: () => toCallControlCall(call), secret: account.signingSecret }),
 *     emit: (e) => publisher.emit({ accountId, code: e.code, callId, data: e.data }),
 *     fallback: { mode: account.fallbackMode, value: account.fallbackValue },
 *   };
 *   const interpreter = new Interpreter(ctx);
 *   const end = await interpreter.run({ url: resolvedCallControlUrl });   // never rejects once started
 *   // on BYE / API hangup / balance exhausted: interpreter.kill()  (stops the verb; does not hang up)
 *
 * - parseVerbDocument(xml): VerbDocument, or VerbDocumentError (code VERB_DOCUMENT_INVALID, `line`, `problems`).
 * - fetchVerbDocument({ url, fields, secret, timeoutMs?, signal? }): signed POST; WebhookFetchError with
 *   `reason` http_status | timeout | network | invalid_document | aborted.
 * - buildCallControlFields(call, extras?): exactly the spec's call-control fields.
 * - signWebhook(secret, url, timestamp, rawBody), canonicalJson(value): pure; the same bytes as events/.
 * - Interpreter ends: hangup | end_of_document | killed | fallback (WH.0400 emitted, fallback run, hung up) |
 *   redirect_limit | error (a context operation threw; hung up).
 */
export { parseVerbDocument, MAX_DOCUMENT_BYTES, MAX_SAY_CHARS } from './parse.js';
export {
  fetchVerbDocument,
  callControlFetcher,
  type CallControlFetcherOptions,
  buildCallControlFields,
  CALL_CONTROL_DEADLINE_MS,
  type ActionCallbackExtras,
  type CallControlCall,
  type CallControlEndUser,
  type CallControlFields,
  type DialCallStatus,
  type FetchVerbDocumentOptions,
} from './fetch.js';
export { signWebhook, canonicalJson } from '../events/index.js';
export {
  VerbDocumentError,
  WebhookFetchError,
  CanonicalJsonError,
  RedirectLimitError,
  type WebhookFailureReason,
} from './errors.js';
export * from './types.js';
export type * from './context.js';
export {
  Interpreter,
  DEFAULT_MAX_REDIRECTS,
  type InterpreterEnd,
  type InterpreterOptions,
  type InterpreterStart,
} from './interpreter.js';
export { VERB_REGISTRY, createVerbTask, type VerbRegistry, type VerbTaskClass } from './tasks/registry.js';
export { VerbTaskBase, type VerbOutcome, type VerbTask } from './tasks/verb-task.js';
export * from './types-live.js';
export * from './types-conference.js';
export type * from './context-live.js';
