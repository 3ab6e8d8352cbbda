import { ReasonCodes, type ReasonCode } from '../../events/index.js';
import type { LegMediaOptions } from '../../media/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import type { BridgedCall } from '../bridged-call.js';
import type { CallServices } from '../call-services.js';
import { mediaProfileFor, type DialLegOutcome } from './dial-leg.js';
import { failureReason } from './originate.js';

/** The far side of a phone's bridged call: how it is rung and the media profile it takes. */
export interface BridgeTarget {
  side: LegMediaOptions;
  dial(o: { sdp: string; signal: AbortSignal; onRinging: () => void }): Promise<DialLegOutcome>;
  /**
   * The far side did not answer (busy, no answer, refused): per end-user call handling (calls/call-handling.ts) may
   * take the still-ringing caller elsewhere (a forward, voicemail). True when it did; the caller is then its.
   */
  onUnanswered?(reason: ReasonCode): Promise<boolean>;
  /** The call was already set up and rung once (a forward after it): CALL.0100 is not emitted again. */
  continued?: boolean;
}

/**
 * A phone's call bridged to one other leg through rtpengine (an on-net extension, or the emergency route): the
 * phone's offer is relayed, the far side rung (180 to the phone when it rings), and on answer both legs are
 * attached to the call, which lives until either side hangs up. A far side that does not answer ends the call with
 * its reason and the matching SIP status to the phone.
 */
export async function bridgePhone(
  d: CallServices,
  req: SipRequest,
  srv: Responder,
  call: BridgedCall,
  target: BridgeTarget,
): Promise<void> {
  const row = call.life.row;
  if (!target.continued) await call.life.initiated();
  const cancel = new AbortController();
  call.onEnd(() => cancel.abort());
  srv.signal.addEventListener('abort', () => void call.end(ReasonCodes.canceled), { once: true });
  try {
    const offer = await d.media.offer(row.id, 'A', req.body.toString(), { toSide: target.side });
    const leg = await target.dial({
      sdp: offer,
      signal: cancel.signal,
      onRinging: () => {
        srv.send(180, 'Ringing');
        void call.life.ringing();
      },
    });
    if (!leg.ok) {
      const reason = call.isEnding ? ReasonCodes.canceled : failureReason(leg.error, leg.noAnswer);
      if (!call.isEnding && !srv.canceled && (await target.onUnanswered?.(reason))) return;
      srv.send(statusFor(reason), undefined);
      await call.end(reason);
      return;
    }
    const callerSide = mediaProfileFor(req.source?.transport);
    call.attach(leg.dialog, { tag: 'B', side: target.side });
    const answer = await d.media.answer(row.id, 'A', 'B', leg.dialog.remoteSdp ?? '', { fromSide: callerSide });
    // The caller's leg joins the bridge as the 200 goes out, not once the ACK is in: a REFER whose Replaces names
    // it (attended transfer), or its BYE, may be read before the ACK or in the same turn (the UDP front hands the
    // main thread the datagrams it read together), and must find it.
    await d.sip.ua.createUAS(req, {
      localSdp: answer,
      onConfirmed: (uas) => call.attach(uas, { tag: 'A', side: callerSide }),
    });
    await call.answered();
    await call.life.ended; // a phone token's call slot is held until the call ends
  } catch (e) {
    d.log.warn({ err: e, call: row.sid }, 'bridged phone call failed');
    srv.send(500, 'Server Internal Error');
    await call.end(call.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
  }
}

/** The SIP final status the caller gets when the dialled leg did not connect. */
function statusFor(reason: ReasonCode): number {
  switch (reason) {
    case ReasonCodes.busy:
      return 486;
    case ReasonCodes.noAnswer:
      return 480;
    case ReasonCodes.canceled:
      return 487;
    case ReasonCodes.unallocatedNumber:
      return 404;
    case ReasonCodes.rejected:
      return 603;
    default:
      return 502;
  }
}
