import type { Context } from 'koa';
import { z } from 'zod';
import { ApiError, ValidationError } from './errors.js';

/** Request bodies are small JSON documents; anything larger is refused before parsing. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Reads and parses the JSON body. An empty body is `undefined` (the schema then decides whether that is allowed);
 * malformed JSON is a 400 naming the problem, never a 500.
 */
export async function readJsonBody(ctx: Context): Promise<unknown> {
  return parseJsonText(ctx, (await readRawBody(ctx)).toString('utf8'));
}

/** The body's bytes, as sent (a signature is checked over them), refused past `max` bytes. */
export async function readRawBody(ctx: Context, max = MAX_BODY_BYTES): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw new ApiError(413, 'BODY_TOO_LARGE', `The request body exceeds ${max} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Parses a JSON body already read (see readJsonBody). */
export function parseJsonText(ctx: Context, text: string): unknown {
  if (text.trim() === '') return undefined;
  const type = ctx.get('content-type');
  if (type && !/^application\/(.+\+)?json\b/i.test(type))
    throw new ApiError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'The request body must be JSON (Content-Type: application/json).',
    );
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError(400, 'MALFORMED_JSON', `The request body is not valid JSON: ${(e as Error).message}`);
  }
}

function valueAt(root: unknown, p: PropertyKey[]): unknown {
  let v = root;
  for (const k of p) v = v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

function describe(issue: z.core.$ZodIssue, input: unknown): string {
  const field = issue.path.length ? issue.path.join('.') : '';
  if (field && issue.code !== 'unrecognized_keys' && valueAt(input, issue.path) === undefined)
    return `the field "${field}" is required`;
  if (issue.code === 'unrecognized_keys') return `unknown field(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  return field ? `the field "${field}" is invalid: ${issue.message}` : issue.message;
}

/** Parses a value against a schema; a failure is a 400 naming the field and what was expected. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query'): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const first = r.error.issues[0];
  throw new ValidationError(`Invalid request ${where}: ${describe(first, value)}.`);
}

export async function parseBody<S extends z.ZodType>(ctx: Context, schema: S): Promise<z.output<S>> {
  const raw = await readJsonBody(ctx);
  return parseWith(schema, raw ?? {}, 'body');
}

export function parseQuery<S extends z.ZodType>(ctx: Context, schema: S): z.output<S> {
  const q: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.query)) {
    if (Array.isArray(v))
      throw new ValidationError(`Invalid request query: the parameter "${k}" is given more than once.`);
    if (v !== undefined) q[k] = v;
  }
  return parseWith(schema, q, 'query');
}
