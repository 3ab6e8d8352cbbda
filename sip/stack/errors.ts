/**
 * Typed errors of the SIP stack. Each carries a stable `code`; errors that stand for a SIP final response
 * also carry the `status` (RFC 3261 §21) so the application can map them.
 */
export class SipError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/**
 * A message could not be parsed; `status` is what a UAS answers (400, or 505 for a bad version). A message
 * refused for its size before any parsing carries the code `SIP_TOO_LARGE` and status 513 (RFC 3261 §21.5.14).
 */
export class SipParseError extends SipError {
  constructor(message: string, status = 400, code: 'SIP_PARSE' | 'SIP_TOO_LARGE' = 'SIP_PARSE') {
    super(code, status, message);
  }
}

/** A final non-2xx response ended a request we sent (RFC 3261 §8.1.3.4). */
export class SipResponseError extends SipError {
  readonly reason: string;
  constructor(status: number, reason: string) {
    super('SIP_REJECTED', status, `${status} ${reason}`);
    this.reason = reason;
  }
}

/** Timer B or F fired: no final response (RFC 3261 §17.1.1.2, §17.1.2.2); mapped to 408. */
export class SipTimeoutError extends SipError {
  constructor(message = 'transaction timed out') {
    super('SIP_TIMEOUT', 408, message);
  }
}

/** The transport could not deliver (dead connection, unreachable); mapped to 503 (RFC 3261 §8.1.3.1). */
export class SipTransportError extends SipError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SIP_TRANSPORT', 503, message, options);
  }
}

/** The caller aborted an outgoing INVITE (CANCEL sent, 487 expected). */
export class SipCanceledError extends SipError {
  constructor() {
    super('SIP_CANCELED', 487, 'request canceled');
  }
}

/** A request was issued on a dialog that has ended. */
export class SipDialogTerminatedError extends SipError {
  constructor() {
    super('SIP_DIALOG_TERMINATED', 481, 'dialog terminated');
  }
}

/** The stack was used after close(), or a listen option was invalid. */
export class SipStateError extends SipError {
  constructor(message: string) {
    super('SIP_STATE', 500, message);
  }
}

/**
 * Passed as an AbortSignal's reason to cancel an outgoing INVITE with a `Reason` header on the CANCEL (RFC 3326),
 * e.g. `SIP;cause=200;text="Call completed elsewhere"` when another fork answered (RFC 3261 §16.7 step 10).
 */
export class CancelReason {
  constructor(readonly header: string) {}
}

/** The Reason a forking B2BUA puts on the CANCELs of the forks that lost (RFC 3326 §2, RFC 3261 §16.7). */
export const COMPLETED_ELSEWHERE = new CancelReason('SIP;cause=200;text="Call completed elsewhere"');
