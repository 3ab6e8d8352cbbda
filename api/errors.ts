import type { Context, Next } from 'koa';
import type { Logger } from '../config/index.js';

/**
 * An error that reaches a client. Every error body is `{ detail, code }`: a sentence for people and a stable
 * code for programs (docs/api.md lists them).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

export class ValidationError extends ApiError {
  constructor(detail: string) {
    super(400, 'VALIDATION_ERROR', detail);
    this.name = 'ValidationError';
  }
}

export class UnauthorizedError extends ApiError {
  constructor(detail = 'A valid API key is required: send Authorization: Bearer <API_KEY>.') {
    super(401, 'AUTH_INVALID_KEY', detail, { 'WWW-Authenticate': 'Bearer' });
    this.name = 'UnauthorizedError';
  }
}

export const notFound = (what: string, code: string): ApiError => new ApiError(404, code, `${what} not found.`);

interface Typed {
  status?: unknown;
  code?: unknown;
  message?: unknown;
  retryAfterSeconds?: unknown;
}

export interface ErrorResponse {
  status: number;
  body: { detail: string; code: string };
  headers: Record<string, string>;
  /** True when the error is a fault of ours (logged), not a refusal of the request. */
  fault: boolean;
}

/**
 * Typed errors from any room that carry a numeric `status` and a string `code` (ApiError, store errors,
 * InsufficientFundsError, AdmissionRefusedError) keep both; anything else is a 500 whose message is logged, not
 * shown.
 */
export function toErrorResponse(err: unknown): ErrorResponse {
  const e = (err ?? {}) as Typed;
  const status = typeof e.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : 500;
  const headers: Record<string, string> = err instanceof ApiError ? { ...err.headers } : {};
  if (typeof e.retryAfterSeconds === 'number') headers['Retry-After'] = String(e.retryAfterSeconds);
  let code = typeof e.code === 'string' ? e.code : `HTTP_${status}`;
  let detail = typeof e.message === 'string' && e.message ? e.message : 'Request failed.';
  // A 5xx is shown only when it is a deliberate refusal with a catalogue code (e.g. PLATFORM.0503).
  const deliberate = err instanceof ApiError || status < 500 || /^[A-Z]+\.\d{4}$/.test(code);
  if (!deliberate) {
    code = 'INTERNAL_ERROR';
    detail = 'Internal error; the request was not completed.';
  }
  if (!/[.!?]$/.test(detail)) detail = `${detail}.`;
  detail = detail[0].toUpperCase() + detail.slice(1);
  return { status: deliberate ? status : 500, body: { detail, code }, headers, fault: !deliberate };
}

/** The one error middleware: every failure leaves as `{ detail, code }` with its status. */
export function errorMiddleware(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError(404, 'ROUTE_NOT_FOUND', `No endpoint answers ${ctx.method} ${ctx.path}.`);
      }
    } catch (err) {
      const r = toErrorResponse(err);
      if (r.fault) log.error({ err, method: ctx.method, path: ctx.path }, 'unhandled error');
      for (const [k, v] of Object.entries(r.headers)) ctx.set(k, v);
      ctx.status = r.status;
      ctx.body = r.body;
    }
  };
}
