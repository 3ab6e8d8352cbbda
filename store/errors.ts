/** A row the caller asked for is not there (or belongs to another account, which is the same thing to it). */
export class NotFoundError extends Error {
  readonly code: string;
  readonly status = 404;
  constructor(what: string, code = 'NOT_FOUND') {
    super(`${what} not found`);
    this.name = 'NotFoundError';
    this.code = code;
  }
}

/** A uniqueness rule would be broken (duplicate email, number already taken, ...). */
export class ConflictError extends Error {
  readonly status = 409;
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'ConflictError';
  }
}

export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; errno?: number; message?: string };
  return (
    err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT' || /UNIQUE constraint failed/.test(err?.message ?? '')
  );
}

/** A store file cannot be backed up or restored as asked (missing, in use, not a Simu store). */
export class StoreError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}
