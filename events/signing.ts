import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * JSON with object keys sorted (by UTF-16 code unit, recursively) and no whitespace: the body form every webhook
 * uses (spec: "Webhooks sent by the service": "Body is built with sorted keys and no extra whitespace").
 * `undefined` members are dropped as JSON.stringify drops them; arrays keep their order.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/**
 * `X-Voice-Signature` (spec: Authentication, item 6): base64 of HMAC-SHA256 keyed with the account's signing
 * secret over the request URL, then the timestamp string, then the raw body bytes exactly as sent. Concatenation
 * is done on bytes so a non-ASCII body is signed as its UTF-8 encoding, never re-encoded.
 */
export function signWebhook(secret: string, url: string, timestamp: string, rawBody: Buffer | string): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  return createHmac('sha256', secret).update(url, 'utf8').update(timestamp, 'utf8').update(body).digest('base64');
}

/** Receiver-side check (used by our own tests and the portal's webhook tester): constant-time compare. */
export function verifyWebhookSignature(
  secret: string,
  url: string,
  timestamp: string,
  rawBody: Buffer | string,
  signature: string,
): boolean {
  const expected = Buffer.from(signWebhook(secret, url, timestamp, rawBody), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
