import { z } from 'zod';
import { ErrorOut } from './schemas.js';
import { isCallPlacement } from './rate-limit.js';
import type { RouteSpec } from './route-table.js';

const json = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as Record<string, unknown>;

function strip(s: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _drop, ...rest } = s;
  return rest;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Validation error or malformed JSON',
  401: 'Missing, unknown or revoked API key, or suspended account',
  402: 'Insufficient balance (BILL.0402)',
  403: 'Refused: account suspended (BILL.0407), or an invalid or expired signed URL',
  404: 'Not found (or belongs to another account)',
  409: 'Conflict (taken, duplicate, or the same Idempotency-Key still in flight)',
  416: 'Range not satisfiable',
  422: 'Idempotency-Key reused with a different body, or a semantically invalid field',
  429: 'Traffic cap: LIMIT.0429 (concurrency) or LIMIT.0430 (calls per second)',
  503: 'Platform draining, or the node holding the call did not answer (PLATFORM.0503), with Retry-After',
};

/**
 * The OpenAPI 3.1 document, made from the route table (the same list the router serves) and the zod schemas
 * the routes validate with. Request schemas are described as accepted (input), responses as sent (output).
 */
export function openApiDocument(specs: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const s of specs) {
    const oaPath =
      s.path.replace(/:(\w+)/g, '{$1}') + (/:\w+$/.test(s.path) || s.path.split('/').length > 3 ? '' : '/');
    const parameters: unknown[] = [...s.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (s.query) {
      const q = strip(json(s.query, 'input')) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {}))
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
    }
    if (s.idempotent)
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        schema: { type: 'string', maxLength: 255 },
        description: 'Per account, remembered 24 h; a retry replays the original status and body.',
      });
    const responses: Record<string, unknown> = {
      [String(s.ok.status)]: {
        description: s.ok.description ?? 'Success',
        content: s.ok.schema
          ? { 'application/json': { schema: strip(json(s.ok.schema, 'output')) } }
          : { [s.ok.contentType ?? 'application/octet-stream']: { schema: { type: 'string', format: 'binary' } } },
      },
    };
    for (const status of s.errors ?? [])
      responses[String(status)] = {
        description: STATUS_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: strip(json(ErrorOut, 'output')) } },
      };
    // Every authenticated route but call placement is under the per-key request rate limit (api/rate-limit.ts).
    if (s.auth !== false && !isCallPlacement(s.path) && !responses['429'])
      responses['429'] = {
        description: 'Per-key request rate limit (RATE_LIMITED), with Retry-After in seconds',
        content: { 'application/json': { schema: strip(json(ErrorOut, 'output')) } },
      };
    const op: Record<string, unknown> = {
      summary: s.summary,
      operationId: `${s.method}_${s.path.replace(/^\/api\//, '').replace(/[/:]+/g, '_')}`,
      parameters,
      responses,
    };
    if (s.auth === false) op.security = [];
    if (s.body)
      op.requestBody = {
        required: true,
        content: { 'application/json': { schema: strip(json(s.body, 'input')) } },
      };
    (paths[oaPath] ??= {})[s.method] = op;
  }
  paths['/api/health/'] = {
    get: {
      summary: 'Service health (no authentication)',
      operationId: 'get_health',
      security: [],
      responses: {
        200: {
          description: 'Healthy',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
        },
        503: {
          description: 'Degraded',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Health' } } },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: { title: 'Simu voice platform API', version: '1.0' },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key sk_…' } },
      schemas: {
        Health: {
          type: 'object',
          properties: { status: { type: 'string', enum: ['ok', 'degraded'] } },
          required: ['status'],
        },
        Error: strip(json(ErrorOut, 'output')),
      },
    },
    paths,
  };
}
