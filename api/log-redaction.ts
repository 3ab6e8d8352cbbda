import { pino } from 'pino';
import type { Logger } from '../config/index.js';

const CENSOR = '[redacted]';

/**
 * Object paths that may hold credentials if request data or an error carrying it is logged: headers (a client
 * library's error often carries its request), API keys, phone and stream tokens, signing secrets, passwords.
 * pino's `*` matches one level, so the common nestings are listed.
 */
export const REDACT_PATHS = [
  'authorization',
  'cookie',
  'headers.authorization',
  'headers.cookie',
  '*.authorization',
  '*.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.*.headers.authorization',
  '*.*.headers.cookie',
  ...['key', 'apiKey', 'api_key', 'token', 'password', 'secret', 'signUrlSecret', 'signing_secret'].flatMap((k) => [
    k,
    `*.${k}`,
  ]),
];

/**
 * Credential shapes scrubbed from free text (error messages and stacks, which redact paths cannot reach):
 * our API keys (`sk_` + 43 base64url characters), bearer credentials of any kind, JWTs (phone tokens) and
 * `sig=` / `token=` query parameters of signed URLs.
 */
const SECRET_TEXT: Array<[RegExp, string]> = [
  [/\bBearer[ \t]+[^\s"',;]+/gi, `Bearer ${CENSOR}`],
  [/\bsk_[A-Za-z0-9_-]{16,}/g, CENSOR],
  [/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, CENSOR],
  [/([?&](?:sig|token|signature)=)[^&\s"']+/gi, `$1${CENSOR}`],
];

export function scrubSecrets(text: string): string {
  let out = text;
  for (const [re, to] of SECRET_TEXT) out = out.replace(re, to);
  return out;
}

/** pino's error serializer, then every string field of the result scrubbed (message, stack, causes). */
export function scrubbedErrorSerializer(err: unknown): unknown {
  const s = pino.stdSerializers.err(err as Error) as unknown;
  return scrubDeep(s, 0);
}

function scrubDeep(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return scrubSecrets(v);
  if (!v || typeof v !== 'object' || depth > 4) return v;
  if (Array.isArray(v)) return v.map((e) => scrubDeep(e, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, e] of Object.entries(v)) out[k] = scrubDeep(e, depth + 1);
  return out;
}

/** A child logger of `base` that never writes the credentials above (redact paths plus scrubbed errors). */
export function redactingLogger(base: Logger): Logger {
  return base.child(
    {},
    { redact: { paths: REDACT_PATHS, censor: CENSOR }, serializers: { err: scrubbedErrorSerializer } },
  );
}
