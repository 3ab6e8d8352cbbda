/**
 * Webhook signature (spec, Authentication item 6): X-Voice-Signature is the base64 of HMAC-SHA256 keyed with
 * the account's signing secret over the request URL, then the timestamp string (Unix seconds), then the raw
 * body bytes exactly as sent. Concatenated with no separator. Pure: no clock, no I/O.
 */
import { createHmac } from 'node:crypto';

export function signWebhook(
  secret: string,
  url: string,
  timestamp: string | number,
  rawBody: string | Uint8Array,
): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(url, 'utf8');
  hmac.update(String(timestamp), 'utf8');
  if (typeof rawBody === 'string') hmac.update(rawBody, 'utf8');
  else hmac.update(rawBody);
  return hmac.digest('base64');
}
