import type { LegMediaOptions } from '../../media/index.js';
import type { Dialog, Outbound, SipRequest, TransportName } from '../../sip/stack/index.js';
import type { CallServices } from '../call-services.js';
import { abortQuietly } from '../../kit/index.js';

/**
 * The media a leg gets from its signalling transport: WebRTC (DTLS-SRTP) for WebSocket phones, SRTP with SDES
 * keys for phones on TLS (the keys travel in the encrypted SDP), plain RTP otherwise (carriers, UDP/TCP phones).
 */
export function mediaProfileFor(transport: TransportName | undefined): LegMediaOptions {
  if (transport === 'WS' || transport === 'WSS') return { profile: 'webrtc' };
  if (transport === 'TLS') return { profile: 'srtp' };
  return { profile: 'rtp' };
}

export interface LegTarget {
  uri: string;
  proxy?: Outbound;
  auth?: { username: string; password: string };
  transport?: TransportName;
  /** A preloaded Route set (a registered phone's Path, RFC 3327 §5.3), first hop first. */
  route?: string[];
}

export interface DialLegOptions {
  target: LegTarget;
  /** From header of the new leg (the caller ID it presents). */
  from: string;
  to?: string;
  sdp: string;
  timeoutSeconds: number;
  signal?: AbortSignal;
  onRinging?: () => void;
  /** The next hop sent 100 Trying (routing's no-response timer stops). */
  onTrying?: () => void;
  /** A provisional response carried SDP: early media (RFC 3960), announced as CALL.0183 by the caller. */
  onEarlyMedia?: () => void;
}

/** The outcome of ringing a second leg; `noAnswer` when our own timeout cancelled it. */
export type DialLegOutcome = { ok: true; dialog: Dialog } | { ok: false; error: unknown; noAnswer: boolean };

/** INVITEs one leg, ringing at most `timeoutSeconds`; cancelled by `signal` or the timeout. */
export async function dialLeg(d: CallServices, o: DialLegOptions): Promise<DialLegOutcome> {
  const ring = new AbortController();
  let noAnswer = false;
  const timer = setTimeout(() => {
    noAnswer = true;
    abortQuietly(ring);
  }, o.timeoutSeconds * 1000);
  // The canceller's reason travels on (a CancelReason puts a Reason header on the CANCEL, RFC 3326).
  const onAbort = () => ring.abort(o.signal?.reason);
  o.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const dialog = await d.sip.ua.createUAC(o.target.uri, {
      localSdp: o.sdp,
      from: o.from,
      to: o.to,
      ...(o.target.route && o.target.route.length > 0 ? { headers: { Route: o.target.route } } : {}),
      proxy: o.target.proxy,
      auth: o.target.auth,
      signal: ring.signal,
      onTrying: o.onTrying,
      onProvisional: (res) => {
        if (res.status === 180 || res.status === 183) o.onRinging?.();
        if (res.body.length > 0 && /^application\/sdp\b/i.test(res.headers.get('content-type') ?? ''))
          o.onEarlyMedia?.();
      },
    });
    return { ok: true, dialog };
  } catch (error) {
    return { ok: false, error, noAnswer };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
}

/** The number or name in a request's From, for CDRs. */
export function fromUser(req: SipRequest): string {
  const from = req.headers.get('from') ?? '';
  const m = /sips?:([^@;>]+)@/.exec(from) ?? /tel:([^;>]+)/.exec(from);
  return m ? decodeURIComponent(m[1]) : 'anonymous';
}
