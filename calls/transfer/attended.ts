import { ReasonCodes, TransferRefusals } from '../../events/index.js';
import { dialogMatches, type ReplacesTarget } from '../../sip/stack/index.js';
import { completeTowards, newLegTag, offerTowards, restoreTowards } from './leg-move.js';
import { completeTransfer, refuseTransfer, type Transfer } from './transfer-steps.js';

/**
 * Attended transfer in a B2BUA (RFC 5589 §7 seen from the switch): the transferor talks to the transferee on this
 * bridge and has a consultation call with the target on another; its REFER's Refer-To carries Replaces naming its
 * own leg of that consultation call (RFC 3891). The switch does the replacing itself, nothing is forwarded: the
 * target's leg leaves the consultation call and is re-INVITEd with the transferee's media from this call's session,
 * the consultation call ends (its transferor leg is sent BYE, its CDR closed), and the target takes the
 * transferor's place here on a new leg (CDR with `parent_call_id`). The consultation call must be a live bridge of
 * the same account; anything else is refused with NOTIFY 404 and TRANSFER_REPLACES_NO_DIALOG.
 */
export async function attendedTransfer(t: Transfer, r: ReplacesTarget): Promise<void> {
  const { d, bridge, transferee } = t;
  const row = bridge.life.row;
  const found = d.findBridge(row.account_id, (dialog) => dialogMatches(dialog, r));
  if (!found || found.bridge === bridge || found.bridge.isEnding)
    return refuseTransfer(t, 404, TransferRefusals.noDialog);
  const consultation = found.bridge;
  const target = consultation.otherLeg(found.leg.dialog);
  if (!target) return refuseTransfer(t, 404, TransferRefusals.noDialog);
  const leg = await d.openLeg(bridge, {
    account_id: row.account_id,
    direction: consultation.life.row.direction,
    from_number: transferee.party,
    to_number: target.party,
  });
  await leg.life.initiated();
  const tag = newLegTag();
  const offer = await offerTowards(d.media, row.id, transferee, { tag, side: target.side });
  consultation.releaseLeg(target);
  let answer: string | undefined;
  try {
    answer = await target.dialog.modify(offer);
  } catch (e) {
    // The target would not take the new media: it is hung up with the consultation call, the transferee goes back.
    d.log.warn({ err: e, call: row.sid }, 'attended transfer: the target refused the re-INVITE');
    await target.dialog.bye().catch(() => undefined);
    await consultation.end(ReasonCodes.normalHangup);
    await restoreTowards(d.media, row.id, transferee, t.transferor).catch(() => undefined);
    await leg.end(ReasonCodes.carrierFailure);
    await t.sub.finish(488);
    return;
  }
  await completeTowards(d.media, row.id, transferee, tag, answer ?? '', d.log);
  await consultation.end(ReasonCodes.normalHangup);
  await leg.answered();
  // The consultation call is a phone-to-phone bridge: the target is a phone.
  const next = { dialog: target.dialog, tag, side: target.side, party: target.party };
  await completeTransfer(t, next, leg, 'attended', true);
}
