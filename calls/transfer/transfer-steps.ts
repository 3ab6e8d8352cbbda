import { EventCodes, ReasonCodes, type TransferRefusal } from '../../events/index.js';
import type { ReferSubscription } from '../../sip/stack/index.js';
import type { ChildLeg } from '../child-leg.js';
import type { BridgeFinder, TransferableBridge, TransferLeg } from './transfer-bridge.js';
import type { NewCall } from '../../store/index.js';
import type { CallServices, LocatingServices } from '../call-services.js';

/** What a transfer is handed: the call services with the location service, and the engine's hold on legs. */
export interface TransferContext extends LocatingServices<CallServices> {
  /**
   * Opens the CDR of the transferred party's new leg (`parent_call_id` = the call transferred) and has the engine
   * hold it, so a billing cut of the leg ends the call it belongs to (`parent.end`).
   */
  openLeg(parent: TransferableBridge, call: Omit<NewCall, 'parent_call_id' | 'parent_call_sid'>): Promise<ChildLeg>;
  /** The live bridges of an account, searched for the dialog an attended transfer's Replaces names. */
  findBridge: BridgeFinder;
}

/** One transfer under way: who asked, who moves, and the REFER's subscription that reports it. */
export interface Transfer {
  d: TransferContext;
  bridge: TransferableBridge;
  transferor: TransferLeg;
  transferee: TransferLeg;
  sub: ReferSubscription;
  /** The account's SIP domain as the transferor writes it (its REFER's From host), for the new leg's headers. */
  domain: string | undefined;
  /** Watches a leg for REFERs of its own (the new party may transfer again). */
  watch(leg: TransferLeg): void;
}

/** XFER.0403 on the call, and the refusal as the subscription's last NOTIFY (403, 404, 480 ...). */
export async function refuseTransfer(t: Transfer, status: number, reason: TransferRefusal | string): Promise<void> {
  t.d.log.info({ call: t.bridge.life.row.sid, reason }, 'transfer refused');
  await t.bridge.life.emit(EventCodes.transferRefused, { reason, status });
  await t.sub.finish(status);
}

/**
 * The transferred party's new leg goes into the bridge in the transferor's place; the transferor hears NOTIFY 200
 * (RFC 3515 §2.4.5) and is sent BYE; XFER.0200 names the new leg's CDR. A new leg that is a phone's (`phone`) may
 * transfer again; a carrier's leg (a number) is not watched: its REFER stays 501.
 */
export async function completeTransfer(
  t: Transfer,
  next: TransferLeg,
  leg: ChildLeg,
  kind: string,
  phone: boolean,
): Promise<void> {
  t.bridge.replaceLeg(t.transferor, next);
  t.bridge.onEnd(() => void leg.end(ReasonCodes.normalHangup));
  if (phone) t.watch(next);
  await t.bridge.life.emit(EventCodes.callTransferred, {
    kind,
    by: t.transferor.party,
    to: leg.life.row.to_number,
    childSid: leg.life.row.sid,
  });
  await t.sub.finish(200, 'OK');
  await t.transferor.dialog.bye().catch(() => undefined);
}
