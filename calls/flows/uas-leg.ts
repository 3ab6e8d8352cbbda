import type { LegMediaOptions } from '../../media/index.js';
import { SipCanceledError, type Responder, type SipRequest } from '../../sip/stack/index.js';
import type { CallServices } from '../call-services.js';
import { CALLER_LEG, type LiveCall } from '../live-call.js';
import type { UnansweredLeg } from '../unanswered-leg.js';

/**
 * The caller's INVITE as an UnansweredLeg of `call`: one rtpengine answer for the caller's offer, made the first
 * time early media or the answer needs it, sent in a 183 (early media) and in the 200; or a final refusal.
 */
export function uasLeg(
  d: CallServices,
  call: LiveCall,
  req: SipRequest,
  srv: Responder,
  opts: { callerSide?: LegMediaOptions } = {},
): UnansweredLeg {
  let sdp: Promise<string> | undefined;
  const media = () =>
    (sdp ??= d.media.answerIvr(call.id, CALLER_LEG, req.body.toString(), {
      ...(opts.callerSide ? { callerSide: opts.callerSide } : {}),
    }));
  return {
    async answer() {
      const local = await media();
      if (call.isEnding) throw new SipCanceledError(); // the call ended while the media was set up: no 200
      // The dialog exists from the 200 (RFC 3261 §12.1.1): the caller's BYE is watched from then, not from its ACK (a
      // BYE read in the same batch as the ACK, or after a lost ACK, was missed, and the call ended 32 s later).
      await d.sip.ua.createUAS(req, { localSdp: local, onConfirmed: (dialog) => call.attachDialog(dialog) });
      await call.answered();
    },
    async earlyMedia() {
      const local = await media();
      srv.send(183, 'Session Progress', { body: local });
    },
    refuse(refusal) {
      srv.send(refusal.status, refusal.phrase);
    },
  };
}
