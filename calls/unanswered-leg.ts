import { ReasonCodes, type ReasonCode } from '../events/index.js';

/** A final non-2xx answer to a caller's INVITE: status and reason phrase. */
export interface SipRefusal {
  readonly status: number;
  readonly phrase: string;
}

/**
 * A caller's INVITE the platform has not answered yet (inbound calls ring while the first verb document is
 * fetched; an end-user's call to the PSTN without a voice_outbound webhook is never answered). The call decides
 * what happens to it: answer it when a verb needs media, play early media, or refuse it.
 */
export interface UnansweredLeg {
  /** The media answer, the 200 with it, the dialog attached and the call answered (billing starts). */
  answer(): Promise<void>;
  /** A 183 Session Progress with the media answer (RFC 3960 early media): audio reaches the caller unanswered. */
  earlyMedia(): Promise<void>;
  /** A final non-2xx; ignored once a final response went out (a CANCEL's 487, say). */
  refuse(refusal: SipRefusal): void;
}

/** A document that hangs up before anything needed media (Hangup first, an empty Response): the caller declined. */
export const DECLINED: SipRefusal = { status: 603, phrase: 'Decline' };
/** `<Reject reason="busy">`, and a call that ends busy while it rings. */
export const BUSY: SipRefusal = { status: 486, phrase: 'Busy Here' };
/** The first document could not be fetched and the fallback is `drop`: our side failed, temporarily. */
export const CALL_CONTROL_UNAVAILABLE: SipRefusal = { status: 500, phrase: 'Call Control Unavailable' };
/** END.0501: an end-user dialled the PSTN and the account has no voice_outbound webhook. */
export const NO_OUTBOUND_HANDLER: SipRefusal = { status: 403, phrase: 'No Outbound Voice Webhook' };

/** The final status an unanswered call gets when it ends for `reason` without a refusal of its own. */
export function refusalFor(reason: ReasonCode): SipRefusal {
  switch (reason) {
    case ReasonCodes.canceled:
      return { status: 487, phrase: 'Request Terminated' };
    case ReasonCodes.rejected:
      return DECLINED;
    case ReasonCodes.busy:
      return BUSY;
    case ReasonCodes.carrierFailure:
      return { status: 500, phrase: 'Server Internal Error' };
    case ReasonCodes.noOutboundHandler:
      return NO_OUTBOUND_HANDLER;
    case ReasonCodes.normalHangup: // only the switch shutting down ends a ringing call this way
      return { status: 503, phrase: 'Service Unavailable' };
    default:
      return { status: 480, phrase: 'Temporarily Unavailable' };
  }
}
