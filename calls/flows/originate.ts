import { ReasonCodes, reasonForSipStatus, type ReasonCode } from '../../events/index.js';
import { SipCanceledError, SipError } from '../../sip/stack/index.js';
import type { FlowDeps } from './flow-deps.js';
import { CALLER_LEG, type LiveCall } from '../live-call.js';

/**
 * API-originated call (spec: POST /api/calls/originate): dial `to` through the carrier trunk presenting the
 * owned DID `from`; ring for at most `timeout` seconds; on answer fetch verbs from the call's `url`.
 * The platform is the caller's other end: rtpengine anchors the callee against our IVR endpoint.
 */
export async function runOriginate(d: FlowDeps, call: LiveCall, timeoutSeconds: number): Promise<void> {
  const row = call.row;
  const route = await d.sip.trunks.outboundRoute();
  if (!route) {
    d.log.warn({ call: row.sid }, 'no carrier trunk configured; outbound call failed');
    await call.end(ReasonCodes.carrierFailure);
    return;
  }
  const ring = new AbortController();
  let noAnswer = false;
  const timer = setTimeout(() => {
    noAnswer = true;
    ring.abort();
  }, timeoutSeconds * 1000);
  call.onEnd(() => ring.abort()); // an API hangup while ringing CANCELs the INVITE
  try {
    const offer = await d.media.offerIvr(row.id, CALLER_LEG, { calleeSide: { profile: 'rtp' } });
    const dialog = await d.sip.ua.createUAC(route.requestUri(row.to_number), {
      localSdp: offer,
      from: `<sip:${row.from_number}@${d.config.publicHost}>`,
      to: `<sip:${row.to_number}@${route.trunk.host}>`,
      proxy: route.outbound,
      auth: route.auth,
      signal: ring.signal,
      onProvisional: (res) => {
        if (res.status === 180 || res.status === 183) void call.life.ringing();
      },
    });
    clearTimeout(timer);
    if (call.isEnding) {
      await dialog.bye().catch(() => undefined);
      return;
    }
    await d.media.completeIvr(row.id, CALLER_LEG, dialog.remoteSdp ?? '');
    call.attachDialog(dialog);
    await call.answered();
    await call.runVerbs({ url: row.webhook_url ?? '' });
  } catch (e) {
    clearTimeout(timer);
    await call.end(failureReason(e, noAnswer));
  }
}

export function failureReason(e: unknown, noAnswer: boolean): ReasonCode {
  if (e instanceof SipCanceledError) return noAnswer ? ReasonCodes.noAnswer : ReasonCodes.canceled;
  if (e instanceof SipError) return reasonForSipStatus(e.status);
  return ReasonCodes.carrierFailure;
}
