/**
 * The checks a UAS makes before handing a request to the application (RFC 3261 §8.2.1-§8.2.3), returning the
 * rejection to send, if any. Pure, so the RFC 4475 application cases are tested without a network.
 */
import { isSipUri, type SipRequest } from '../message/index.js';
import { RFC_MIN_SE, readSessionExpires } from '../dialog/session-timer.js';

export interface RequestPolicy {
  /** Option tags we support (Require values outside it get 420). */
  supported: readonly string[];
  /** Body types we understand (others get 415). */
  acceptedBodies: readonly string[];
  /**
   * RFC 4028 Min-SE: an INVITE asking for a shorter Session-Expires gets 422 with this Min-SE (§8.1, §9). Never
   * below 90 s (§4) outside tests.
   */
  minSessionExpires?: number;
}
export const DEFAULT_POLICY: RequestPolicy = {
  supported: ['path', 'outbound', 'replaces', 'timer', '100rel'],
  acceptedBodies: [
    'application/sdp',
    'multipart/mixed',
    'multipart/alternative',
    'application/dtmf-relay',
    'application/dtmf',
  ],
};

export interface Rejection {
  status: number;
  headers?: Record<string, string>;
}

function listValues(req: SipRequest, name: string): string[] {
  return req.headers.getAll(name).map((v) => v.trim().toLowerCase());
}

export function validateRequest(req: SipRequest, policy: RequestPolicy = DEFAULT_POLICY): Rejection | null {
  const scheme = req.uri.scheme;
  // §8.2.2.1: a Request-URI scheme we do not understand gets 416 (RFC 4475 unkscm, novelsc).
  if (!isSipUri(req.uri) && scheme !== 'tel') return { status: 416 };
  // §16.3 step 3 (we forward as a B2BUA): Max-Forwards 0 gets 483 (RFC 4475 zeromf).
  if (req.maxForwards === 0 && req.method !== 'ACK') return { status: 483 };
  // §8.2.2.3: unknown Require option tags get 420 listing them in Unsupported; never for ACK or CANCEL.
  if (req.method !== 'ACK' && req.method !== 'CANCEL') {
    const unknown = listValues(req, 'require').filter((t) => !policy.supported.includes(t));
    if (unknown.length > 0) {
      return { status: 420, headers: { Unsupported: req.headers.getAll('require').join(', ') } };
    }
  }
  // RFC 4028 §9: a session interval below our minimum gets 422 naming it.
  if (req.method === 'INVITE') {
    const se = readSessionExpires(req);
    const min = policy.minSessionExpires ?? RFC_MIN_SE;
    if (se && se.seconds < min) return { status: 422, headers: { 'Min-SE': String(min) } };
  }
  // §8.2.3: a body we cannot read gets 415 with Accept.
  const type = req.contentType;
  if (req.body.length > 0 && type !== undefined && !policy.acceptedBodies.includes(type)) {
    return { status: 415, headers: { Accept: policy.acceptedBodies.join(', ') } };
  }
  // §21.4.7: our answer to an INVITE carries SDP; a client that accepts no SDP gets 406 (RFC 4475 sdp01).
  const accept = listValues(req, 'accept').map((a) => a.split(';')[0].trim());
  if (req.method === 'INVITE' && accept.length > 0) {
    if (!accept.some((a) => a === 'application/sdp' || a === 'application/*' || a === '*/*')) return { status: 406 };
  }
  return null;
}
