/**
 * The verbs room: verb documents (parse and validate), the signed call-control request, and the interpreter
 * that runs a document's verbs through a VerbContext the calls room provides.
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
export { signWebhook } from './sign.js';
export { canonicalJson } from './canonical-json.js';
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
export { VERB_REGISTRY, createVerbTask, type VerbRegistry, type VerbTaskClass } from './verbs/registry.js';
export { VerbTaskBase, type VerbOutcome, type VerbTask } from './verbs/verb-task.js';
