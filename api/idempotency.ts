import type { Context } from 'koa';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  sha256Hex,
  type Db,
} from '../store/index.js';
import { ApiError, toErrorResponse } from './errors.js';

/** What a handler produces: the status and body that are sent, and replayed verbatim on a retry. */
export interface Outcome {
  status: number;
  body: unknown;
}

/** JSON with sorted keys, so two bodies that differ only in key order are the same request. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/**
 * Refusals that free the key at once (spec, Idempotency rule 5: 402, 429, validation), plus the other
 * transient refusals (suspended 403, draining 503) and our own faults: none of them did anything, so a retry
 * must be allowed to run. Other errors (404 unknown number, 409 taken) are outcomes and are replayed.
 */
const FREES_KEY = (status: number): boolean => [400, 402, 403, 413, 415, 422, 429].includes(status) || status >= 500;

function send(ctx: Context, status: number, text: string): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = text;
}

/**
 * Runs `run` under the request's `Idempotency-Key` (spec, Limits, Idempotency rules 1-6). `request` is the
 * validated body: the key is bound to it, and reusing the key with another body is a 422.
 */
export async function withIdempotency(
  ctx: Context,
  db: Db,
  accountId: string,
  scope: string,
  request: unknown,
  run: () => Promise<Outcome>,
): Promise<void> {
  const key = ctx.get('idempotency-key');
  if (!key) {
    const out = await run();
    ctx.status = out.status;
    ctx.body = out.body;
    return;
  }
  if (key.length > 255 || !/^[\x21-\x7e]+$/.test(key))
    throw new ApiError(400, 'IDEMPOTENCY_KEY_INVALID', 'Idempotency-Key must be 1 to 255 visible ASCII characters.');
  const hash = sha256Hex(`${scope}\n${canonicalJson(request)}`);
  const claim = await claimIdempotencyKey(db, accountId, key, scope, hash);
  if (claim.kind === 'mismatch')
    throw new ApiError(
      422,
      'IDEMPOTENCY_KEY_REUSED',
      'This Idempotency-Key was already used with a different request; use a new key for a new request.',
    );
  if (claim.kind === 'in_flight')
    throw new ApiError(409, 'IDEMPOTENCY_IN_FLIGHT', 'A request with this Idempotency-Key is still being processed.');
  if (claim.kind === 'replay') {
    ctx.set('Idempotent-Replayed', 'true');
    send(ctx, claim.status, claim.body);
    return;
  }
  let out: Outcome;
  try {
    out = await run();
  } catch (err) {
    const r = toErrorResponse(err);
    if (FREES_KEY(r.status)) {
      await releaseIdempotencyKey(db, accountId, key);
      throw err;
    }
    await completeIdempotencyKey(db, accountId, key, r.status, JSON.stringify(r.body));
    throw err;
  }
  const text = JSON.stringify(out.body);
  await completeIdempotencyKey(db, accountId, key, out.status, text);
  send(ctx, out.status, text);
}
