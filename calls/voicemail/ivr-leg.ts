import { ReasonCodes } from '../../events/index.js';
import type { DtmfEvent } from '../../media/index.js';
import { systemClock } from '../../kit/index.js';
import type { Dialog, Responder, SipRequest } from '../../sip/stack/index.js';
import type { BridgedCall } from '../bridged-call.js';
import { CallDigits } from '../call-digits.js';
import { CALLER_LEG } from '../call-media.js';
import { parseDtmfInfo } from '../dtmf-info.js';
import { mediaProfileFor } from '../flows/dial-leg.js';
import type { CallServices } from '../call-services.js';

/** The caller of a mailbox (leaving a message, or *97): its INVITE, still unanswered, and its call. */
export interface MailboxCaller {
  req: SipRequest;
  srv: Responder;
  call: BridgedCall;
}

/** A caller the switch itself answered: its dialog, its keys, and a signal that aborts when it hangs up. */
export interface AnsweredCaller {
  dialog: Dialog;
  digits: CallDigits;
  /** Aborted by the caller's BYE or any end of the call (API hangup, billing cut, shutdown). */
  gone: AbortSignal;
  /** BYE to the caller if it is still up, then the call's end (the CDR closes normally). */
  hangup(): Promise<void>;
}

/**
 * Answers a phone's call with the switch's own media (an IVR endpoint in rtpengine, as a LiveCall's caller is):
 * whatever the session held before (a bridge to phones that did not answer) is dropped, the caller is answered,
 * billing starts, and its keys (RFC 4733 from our endpoint and from rtpengine's log, in-band tones) arrive
 * de-duplicated through CallDigits, the Gather machinery's key stream. Undefined when the caller gave up first.
 */
export async function answerCaller(d: CallServices, c: MailboxCaller): Promise<AnsweredCaller | undefined> {
  const row = c.call.life.row;
  if (c.srv.canceled || c.srv.finalResponse || c.call.isEnding) return undefined;
  await d.media.deleteSession(row.id);
  const sdp = await d.media.answerIvr(row.id, CALLER_LEG, c.req.body.toString(), {
    callerSide: mediaProfileFor(c.req.source?.transport),
  });
  if (c.call.isEnding || c.srv.canceled) return undefined;
  const gone = new AbortController();
  // The caller's BYE is watched from the 200 on, not from its ACK (see uas-leg.ts); createUAS stops waiting for the
  // ACK of a dialog that ended.
  const dialog = await d.sip.ua.createUAS(c.req, {
    localSdp: sdp,
    onConfirmed: (confirmed) => confirmed.once('bye', () => gone.abort()),
  });
  c.call.onEnd(() => gone.abort());
  const digits = new CallDigits(systemClock);
  const onKey = (e: DtmfEvent) => {
    if (e.callId === row.id && e.legTag === CALLER_LEG) digits.press(e.digit, e.source ?? 'rfc4733-log', e.durationMs);
  };
  d.media.on('dtmf', onKey);
  // Keys in SIP INFO (dtmf-relay, dtmf) count too, as on a LiveCall.
  dialog.on('info', (req, srv) => {
    srv.send(200);
    const key = parseDtmfInfo(req.contentType, req.body);
    if (key) digits.press(key.digit, 'sip-info', key.durationMs);
  });
  if (gone.signal.aborted)
    d.media.off('dtmf', onKey); // the caller hung up before its ACK
  else gone.signal.addEventListener('abort', () => d.media.off('dtmf', onKey), { once: true });
  await c.call.answered();
  return {
    dialog,
    digits,
    gone: gone.signal,
    hangup: async () => {
      if (dialog.state !== 'terminated' && !gone.signal.aborted) await dialog.bye().catch(() => undefined);
      gone.abort();
      await c.call.end(c.call.life.isAnswered ? ReasonCodes.normalHangup : ReasonCodes.canceled);
    },
  };
}
