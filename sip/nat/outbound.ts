/**
 * RFC 5626 (SIP outbound) as the registrar sees it: whether a REGISTER's contact asks for an outbound flow, and the
 * headers of the 200 that accepts one.
 */
import type { SipRequest } from '../stack/index.js';

interface ContactLike {
  uri: { params?: Map<string, string | null> } & object;
  params: Map<string, string | null>;
}

/**
 * Whether this contact of a REGISTER registers an outbound flow: `reg-id` and `+sip.instance` on the Contact with
 * `outbound` in Supported (RFC 5626 §4.2), or the `;ob` URI parameter (§5.4, as phones set for "outbound" mode).
 */
export function registersOutbound(req: SipRequest, contact: ContactLike): boolean {
  if (contact.uri.params?.has('ob')) return true;
  const supported = req.headers
    .getAll('supported')
    .flatMap((v) => v.split(','))
    .some((t) => t.trim().toLowerCase() === 'outbound');
  return supported && contact.params.has('reg-id') && contact.params.has('+sip.instance');
}

/**
 * Headers of the 200 to an outbound registration: `Require: outbound` (§6) and `Flow-Timer` (§4.4): the interval
 * in seconds the phone should send its keep-alives at; none when keep-alives are off (0).
 */
export function outboundHeaders(keepAliveSeconds: number): Record<string, string> {
  return keepAliveSeconds > 0
    ? { Require: 'outbound', 'Flow-Timer': String(Math.max(1, Math.round(keepAliveSeconds))) }
    : { Require: 'outbound' };
}
