export { CanonicalJsonError } from '../events/index.js';
/**
 * Errors that leave the verbs room. Each has a stable `code` (STYLE.md rule 3); callers switch on `code` or
 * on `reason`, never on the message text.
 */

/** A verb document that is not well-formed, not valid against simu-verbs.xsd, or breaks a semantic rule. */
export class VerbDocumentError extends Error {
  readonly code = 'VERB_DOCUMENT_INVALID';
  /** 1-based line of the first problem, when libxml or the parser could tell. */
  readonly line: number | undefined;
  /** Every problem found, each already prefixed with its line. The message repeats the first few. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[], line?: number) {
    const shown = problems.slice(0, 3).join('; ');
    const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : '';
    super(`invalid verb document: ${shown}${more}`);
    this.name = 'VerbDocumentError';
    this.problems = problems;
    this.line = line;
  }
}

/**
 * Why a call-control request produced no usable verb document (spec: "Fallback"). `aborted` is ours: the
 * caller's signal fired (the call ended), so nobody needs the answer and no fallback should run.
 */
export type WebhookFailureReason = 'http_status' | 'timeout' | 'network' | 'invalid_document' | 'aborted';

/**
 * A call-control webhook or action callback failed. The interpreter answers it by running the account's
 * fallback (message / play / drop) and emitting WH.0400 (webhook.failed).
 */
export class WebhookFetchError extends Error {
  readonly code = 'WEBHOOK_FETCH_FAILED';
  readonly reason: WebhookFailureReason;
  readonly url: string;
  /** HTTP status when reason is `http_status` (or `invalid_document` after a 200). */
  readonly status: number | undefined;

  constructor(
    reason: WebhookFailureReason,
    url: string,
    message: string,
    options?: { status?: number; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WebhookFetchError';
    this.reason = reason;
    this.url = url;
    this.status = options?.status;
  }
}

/** The interpreter followed more consecutive Redirects than allowed without the call doing anything. */
export class RedirectLimitError extends Error {
  readonly code = 'VERB_REDIRECT_LIMIT';
  constructor(readonly limit: number) {
    super(`more than ${limit} consecutive Redirects without any verb doing work`);
    this.name = 'RedirectLimitError';
  }
}
