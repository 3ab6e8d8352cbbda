import { createHmac, timingSafeEqual } from 'node:crypto';
import { requestUrl } from '../kit/index.js';

/** The body form every webhook uses (sorted keys, no whitespace): events/canonical-json.ts. */
export { canonicalJson } from './canonical-json.js';

/**
 * `X-Voice-Signature` (spec: Authentication, item 6): base64 of HMAC-SHA256 keyed with the account's signing
 * secret over the request URL, then the timestamp string, then the raw body bytes exactly as sent. Concatenation
 * is done on bytes so a non-ASCII body is signed as its UTF-8 encoding, never re-encoded.
 *
 * "The request URL" is the one rule of kit/request-url.ts for every webhook (call control, action callbacks,
 * status callbacks): the URL exactly as requested, `scheme://host[:port]/path?query`, host lower case, default
 * port and fragment dropped. A receiver signs `scheme://` + its Host header + the request target (docs/api.md).
 */
export function signWebhook(
  secret: string,
  url: string,
  timestamp: string | number,
  rawBody: Uint8Array | string,
): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  return createHmac('sha256', secret)
    .update(requestUrl(url), 'utf8')
    .update(String(timestamp), 'utf8')
    .update(body)
    .digest('base64');
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
