import type { Logger } from '../config/index.js';
import type { LegMediaOptions, MediaService } from '../media/index.js';
import type { Dialog, Responder, SipRequest } from '../sip/stack/index.js';

/** One leg of a bridge: its dialog, its tag in the call's media session and its media profile. */
export interface BridgeLeg {
  dialog: Dialog;
  tag: string;
  side: LegMediaOptions;
}

/**
 * Relays re-INVITEs between the two legs of a bridge (B2BUA, RFC 3261 §14): an offer from one leg (hold with
 * a=sendonly, resume, a new address) is re-offered through rtpengine to the other leg, whose answer goes back
 * the same way. An offer-less re-INVITE (a session refresh) is answered with the current SDP; a second one while
 * one is pending gets 491 (§14.2); one that cannot be relayed gets 488 or the other leg's refusal, and the
 * session stays as it was. `stop()` takes the handlers off (the bridge is over).
 */
export function relayReinvites(
  media: Pick<MediaService, 'offer' | 'answer'>,
  callId: string,
  legs: [BridgeLeg, BridgeLeg],
  log: Logger,
): { stop(): void } {
  let pending = false;
  const relay = async (from: BridgeLeg, to: BridgeLeg, req: SipRequest, srv: Responder): Promise<void> => {
    const answerWith = (sdp: string | undefined): void =>
      void srv.send(200, undefined, sdp ? { body: sdp, headers: { 'Content-Type': 'application/sdp' } } : {});
    if (req.body.length === 0) return answerWith(from.dialog.localSdp);
    if (to.dialog.state === 'terminated') return void srv.send(488, 'Not Acceptable Here');
    if (pending) return void srv.send(491, 'Request Pending');
    pending = true;
    try {
      const offer = await media.offer(callId, from.tag, req.text, { toSide: to.side, toTag: to.tag });
      const res = await to.dialog.request('INVITE', { body: offer });
      if (res.status >= 300) return void srv.send(res.status === 491 ? 491 : 488);
      to.dialog.localSdp = offer;
      if (res.body.length > 0) to.dialog.remoteSdp = res.text;
      const answer = await media.answer(callId, from.tag, to.tag, res.text, { fromSide: from.side });
      from.dialog.localSdp = answer;
      answerWith(answer);
    } catch (e) {
      log.warn({ err: e, callId }, 're-INVITE not relayed');
      if (!srv.finalResponse) srv.send(488, 'Not Acceptable Here');
    } finally {
      pending = false;
    }
  };
  const [a, b] = legs;
  const onA = (req: SipRequest, srv: Responder) => void relay(a, b, req, srv);
  const onB = (req: SipRequest, srv: Responder) => void relay(b, a, req, srv);
  a.dialog.on('modify', onA);
  b.dialog.on('modify', onB);
  return {
    stop() {
      a.dialog.off('modify', onA);
      b.dialog.off('modify', onB);
    },
  };
}
