import type { ReasonCode } from '../../events/index.js';
import type { LegMediaOptions } from '../../media/index.js';
import type { Dialog } from '../../sip/stack/index.js';
import type { CallLifecycle } from '../call-lifecycle.js';

/** One leg of a bridge as a transfer sees it: its dialog, its tag in the call's media session, its media profile. */
export interface TransferLeg {
  dialog: Dialog;
  tag: string;
  side: LegMediaOptions;
  /** The number or extension of the party on this leg (the new leg's CDR presents the transferee's). */
  party: string;
}

/**
 * A call with two SIP legs bridged through rtpengine that a phone on it may transfer out of (RFC 3515 REFER):
 * a phone-to-phone BridgedCall, or the bridge a Dial verb makes. The media session is the call's own (its id).
 */
export interface TransferableBridge {
  readonly life: CallLifecycle;
  readonly isEnding: boolean;
  end(reason: ReasonCode): Promise<unknown>;
  /** Run as the call starts ending (the transfer's new leg closes its CDR). */
  onEnd(fn: () => void): void;
  /** The leg across the bridge from `dialog`, while both are up. */
  otherLeg(dialog: Dialog): TransferLeg | undefined;
  /** The leg `dialog` belongs to, while it is up. */
  legOf(dialog: Dialog): TransferLeg | undefined;
  /**
   * `old` leaves the bridge without being sent anything (its BYE no longer ends the call; the caller BYEs it after
   * the last NOTIFY) and `next` takes its place: its BYE ends the call, re-INVITEs are relayed with it, and it is
   * BYEd at the end.
   */
  replaceLeg(old: TransferLeg, next: TransferLeg): void;
  /** `leg` leaves the bridge without a BYE (it moves to another call: attended transfer). */
  releaseLeg(leg: TransferLeg): void;
}

/** Finds the bridge and leg a Replaces names among the live calls of an account (attended transfer). */
export type BridgeFinder = (
  accountId: string,
  match: (dialog: Dialog) => boolean,
) => { bridge: TransferableBridge; leg: TransferLeg } | undefined;

/** The engine's side of transfer a bridge reports to: phones on these legs may transfer the call from now on. */
export interface TransferWatch {
  watch(bridge: TransferableBridge, legs: readonly TransferLeg[]): void;
}
