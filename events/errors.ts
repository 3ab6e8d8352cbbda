/** Errors of the events room; `code` is stable, callers switch on it. */
export class EventsError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The event could not be recorded (call_events / outbox write failed); nothing was published. */
export class EventPersistError extends EventsError {
  constructor(cause: unknown) {
    super('EVENT_PERSIST_FAILED', 'could not record the event', { cause });
  }
}

/** The event asked for a code outside the catalogue, or a platform-only code with an account (or the reverse). */
export class InvalidEventError extends EventsError {
  constructor(message: string) {
    super('EVENT_INVALID', message);
  }
}

/** A value that has no canonical JSON form (a bigint, a function, a non-finite number, a cycle). */
export class CanonicalJsonError extends TypeError {
  readonly code = 'CANONICAL_JSON_UNSUPPORTED';
  constructor(message: string) {
    super(message);
    this.name = 'CanonicalJsonError';
  }
}
