import { ReasonCodes, reasonForSipStatus, type ReasonCode } from '../../events/index.js';
import { SipCanceledError, SipError } from '../../sip/stack/index.js';
import type { CallServices } from '../call-services.js';
import { dialPstn, NoRouteError } from './dial-pstn.js';
import { CALLER_LEG, type LiveCall } from '../live-call.js';
import { detectAndReport, ivrAudio, type MachineDetectionRequest } from '../machine-detection.js';

/**
 * API-originated call (spec: POST /api/calls/originate): dial `to` through the carrier trunk presenting the
 * owned DID `from`; ring for at most `timeout` seconds; on answer fetch verbs from the call's `url`.
 * The platform is the caller's other end: rtpengine anchors the callee against our IVR endpoint.
 */
export async function runOriginate(
  d: CallServices,
  call: LiveCall,
  timeoutSeconds: number,
  machineDetection?: MachineDetectionRequest,
): Promise<void> {
  const row = call.row;
  const cancel = new AbortController();
  call.onEnd(() => cancel.abort()); // an API hangup while ringing CANCELs the INVITE
  try {
    const offer = await d.media.offerIvr(row.id, CALLER_LEG, { calleeSide: { profile: 'rtp' } });
    // Least-cost routing with failover (dial-pstn.ts): each trunk tried is a ROUTE.0100 of this call.
    const leg = await dialPstn(d, {
      number: row.to_number,
      from: `<sip:${row.from_number}@${d.config.publicHost}>`,
      sdp: offer,
      timeoutSeconds,
      signal: cancel.signal,
      onRinging: () => void call.life.ringing(),
      onEarlyMedia: () => void call.life.progress(),
      onAttempt: (code, data) => call.life.emit(code, data),
    });
    if (!leg.ok && leg.error instanceof NoRouteError)
      d.log.warn({ call: row.sid, to: row.to_number }, 'no trunk can carry the call; outbound call failed');
    if (!leg.ok) return void (await call.end(failureReason(leg.error, leg.noAnswer)));
    if (call.isEnding) return void (await leg.dialog.bye().catch(() => undefined));
    await d.media.completeIvr(row.id, CALLER_LEG, leg.dialog.remoteSdp ?? '');
    call.attachDialog(leg.dialog);
    await call.answered();
    if (machineDetection) {
      // Synchronous: the call-control request waits for the verdict and carries it; async: the document runs now.
      const audio = ivrAudio(d.media, row.id, CALLER_LEG);
      const detection = detectAndReport(d, call.life, audio, machineDetection, cancel.signal);
      if (!machineDetection.async) await detection;
      if (call.isEnding) return;
    }
    await call.runVerbs({ url: row.webhook_url ?? '' });
  } catch (e) {
    d.log.error({ err: e, call: row.sid }, 'originate failed');
    await call.end(ReasonCodes.carrierFailure);
  }
}

export function failureReason(e: unknown, noAnswer: boolean): ReasonCode {
  if (e instanceof SipCanceledError) return noAnswer ? ReasonCodes.noAnswer : ReasonCodes.canceled;
  if (e instanceof SipError) return reasonForSipStatus(e.status);
  return ReasonCodes.carrierFailure;
}
