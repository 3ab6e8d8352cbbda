import { EventCodes, ReasonCodes } from '../../events/index.js';
import type { EndUserIdentity } from '../../sip/index.js';
import { dialogMatches, parseReplaces, type Responder, type SipRequest } from '../../sip/stack/index.js';
import { mediaProfileFor } from '../flows/dial-leg.js';
import { newLegTag } from './leg-move.js';
import type { TransferContext } from './transfer-steps.js';
import { watchTransfers } from './transfer.js';

/**
 * An INVITE with Replaces (RFC 3891) from an authenticated phone: the phone takes the place of one leg of a live
 * call of its own account (the dialog the header names, matched by Call-ID and both tags). The remaining party is
 * re-INVITEd with the newcomer's media inside the call's rtpengine session, the newcomer is answered, the replaced
 * leg is sent BYE, and the newcomer's leg gets a CDR with `parent_call_id` (XFER.0200, kind `replaces`).
 * RFC 3891 §3: no such dialog (or one of another account) is 481; `early-only` naming a confirmed dialog is 486.
 */
export async function inviteWithReplaces(
  d: TransferContext,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
): Promise<void> {
  const r = parseReplaces(req.headers.get('replaces'));
  if (!r) return void srv.send(400, 'Bad Replaces');
  const found = d.findBridge(who.accountId, (dialog) => dialogMatches(dialog, r));
  const other = found?.bridge.otherLeg(found.leg.dialog);
  if (!found || !other) return void srv.send(481);
  if (r.earlyOnly) return void srv.send(486);
  const { bridge, leg: replaced } = found;
  const row = bridge.life.row;
  const tag = newLegTag();
  const side = mediaProfileFor(req.source?.transport);
  try {
    const offer = await d.media.offer(row.id, tag, req.body.toString(), { toSide: other.side, toTag: other.tag });
    const remote = await other.dialog.modify(offer);
    const answer = await d.media.answer(row.id, tag, other.tag, remote ?? '', { fromSide: side });
    const dialog = await d.sip.ua.createUAS(req, { localSdp: answer });
    const leg = await d.openLeg(bridge, {
      account_id: row.account_id,
      direction: 'internal',
      from_number: who.extension,
      to_number: other.party,
      end_user_id: who.endUserId,
    });
    await leg.life.initiated();
    await leg.answered();
    const next = { dialog, tag, side, party: who.extension };
    bridge.replaceLeg(replaced, next);
    bridge.onEnd(() => void leg.end(ReasonCodes.normalHangup));
    watchTransfers(d, bridge, next);
    await bridge.life.emit(EventCodes.callTransferred, {
      kind: 'replaces',
      by: who.extension,
      to: who.extension,
      childSid: leg.life.row.sid,
    });
    await replaced.dialog.bye().catch(() => undefined);
  } catch (e) {
    d.log.warn({ err: e, call: row.sid }, 'INVITE with Replaces failed');
    if (!srv.finalResponse) srv.send(500);
  }
}
