import { createHmac } from 'node:crypto';

/**
 * Keys derived from the one server secret, one per use, so a signature made for one purpose (a recording URL)
 * can never pass as another (a phone token).
 */
export function deriveKey(secret: string, purpose: 'phone-token' | 'recording-url' | 'sip-trace'): Buffer {
  return createHmac('sha256', secret).update(`simu:${purpose}`).digest();
}
