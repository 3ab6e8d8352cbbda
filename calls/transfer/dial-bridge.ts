import type { Logger } from '../../config/index.js';
import { ReasonCodes, type ReasonCode } from '../../events/index.js';
import type { MediaService } from '../../media/index.js';
import type { Dialog } from '../../sip/stack/index.js';
import { CALLER_LEG } from '../call-media.js';
import type { LiveCall } from '../live-call.js';
import { relayReinvites } from '../reinvite-relay.js';
import type { TransferableBridge, TransferLeg, TransferWatch } from './transfer-bridge.js';

/** What a Dial's bridge needs: the media (re-INVITE relay) and, when phones may transfer, the engine's side of it. */
export interface DialBridgeDeps {
  media: Pick<MediaService, 'offer' | 'answer' | 'legSide'>;
  log: Logger;
  transfers?: TransferWatch;
}

/**
 * The bridge a Dial verb makes between the call's caller (an IVR-answered or placed leg) and the dialled leg, as a
 * transfer sees it (TransferableBridge): re-INVITEs are relayed between the two (reinvite-relay.ts), and when the
 * dialled leg is a phone (an extension), its REFER may hand the caller to another extension or number
 * (calls/transfer/). The Dial waits for the dialled leg's BYE through `onDialledBye`, which follows the leg a
 * transfer put in place; `close()` ends the bridge (the Dial is over; the verbs go on).
 */
export class DialBridge implements TransferableBridge {
  readonly #call: LiveCall;
  readonly #d: DialBridgeDeps;
  #caller: TransferLeg | undefined;
  #dialled: TransferLeg | undefined;
  #relay: { stop(): void } | undefined;
  #onBye: (() => void) | undefined;
  /** The caller's phone transferred the call away: when the dialled leg ends, nobody is left for the verbs. */
  #callerMoved = false;
  readonly #hooks: Array<() => void> = [];
  #closed = false;

  constructor(
    d: DialBridgeDeps,
    call: LiveCall,
    dialled: { dialog: Dialog; tag: string; side: TransferLeg['side'] },
    phone: boolean,
  ) {
    this.#d = d;
    this.#call = call;
    const row = call.row;
    if (call.dialog) {
      const side = d.media.legSide(row.id, CALLER_LEG) ?? { profile: 'rtp' as const };
      this.#caller = { dialog: call.dialog, tag: CALLER_LEG, side, party: row.from_number };
    }
    // The dialled party: a phone by its Contact's user (its extension), else the number the call dialled.
    this.#dialled = { ...dialled, party: (phone ? userOf(dialled.dialog) : undefined) ?? row.to_number };
    this.#relayBetweenLegs();
    call.onEnd(() => this.#runHooks());
    // A dialled phone may transfer the caller; a caller that is a phone (it dialled out through voice_outbound) may
    // transfer the dialled party.
    const watched = [phone ? this.#dialled : undefined, row.end_user_id ? this.#caller : undefined];
    if (this.#caller)
      d.transfers?.watch(
        this,
        watched.filter((l): l is TransferLeg => l !== undefined),
      );
  }

  get life() {
    return this.#call.life;
  }

  get isEnding(): boolean {
    return this.#closed || this.#call.isEnding;
  }

  /** The dialled leg now (the one a transfer put in place, after one). */
  get dialled(): Dialog | undefined {
    return this.#dialled?.dialog;
  }

  end(reason: ReasonCode): Promise<unknown> {
    return this.#call.end(reason);
  }

  onEnd(fn: () => void): void {
    if (this.#closed) fn();
    else this.#hooks.push(fn);
  }

  /** `fn` runs when the dialled leg hangs up (whichever leg it is by then). */
  onDialledBye(fn: () => void): void {
    this.#onBye = () => {
      if (this.#callerMoved) void this.#call.end(ReasonCodes.normalHangup);
      fn();
    };
    const dialog = this.#dialled?.dialog;
    // The dialled party may have hung up already: its BYE can arrive while the Dial is still setting up the bridge
    // (the media answer, the DIAL.0200 event's write), and that 'bye' was emitted to nobody.
    if (dialog?.state === 'terminated') this.#onBye();
    else dialog?.once('bye', this.#onBye);
  }

  legs(): readonly TransferLeg[] {
    return [this.#caller, this.#dialled].filter((l): l is TransferLeg => l !== undefined);
  }

  legOf(dialog: Dialog): TransferLeg | undefined {
    return this.legs().find((l) => l.dialog === dialog);
  }

  otherLeg(dialog: Dialog): TransferLeg | undefined {
    if (this.legs().length !== 2 || !this.legOf(dialog)) return undefined;
    return this.legs().find((l) => l.dialog !== dialog);
  }

  replaceLeg(old: TransferLeg, next: TransferLeg): void {
    if (old === this.#caller) {
      // The calling phone handed the dialled party to `next`: it is the call's caller leg from now on.
      this.#relay?.stop();
      this.#caller = next;
      this.#callerMoved = true;
      this.#call.handOver(next.dialog);
      this.#relayBetweenLegs();
      return;
    }
    if (old !== this.#dialled) return;
    this.releaseLeg(old);
    this.#dialled = next;
    if (this.#onBye) next.dialog.once('bye', this.#onBye);
    this.#relayBetweenLegs();
  }

  releaseLeg(leg: TransferLeg): void {
    if (leg !== this.#dialled) return;
    this.#relay?.stop();
    this.#relay = undefined;
    if (this.#onBye) leg.dialog.off('bye', this.#onBye);
    this.#dialled = undefined;
  }

  /** The Dial is over: relaying stops, the dialled leg (if still up) is sent BYE, the transfers' legs close. */
  async close(): Promise<void> {
    this.#relay?.stop();
    this.#relay = undefined;
    const dialled = this.#dialled?.dialog;
    if (dialled && dialled.state !== 'terminated') await dialled.bye().catch(() => undefined);
    this.#runHooks();
  }

  /** Once, whether the Dial ended or the whole call did (the call's end runs them before close()). */
  #runHooks(): void {
    this.#closed = true;
    for (const fn of this.#hooks.splice(0)) fn();
  }

  #relayBetweenLegs(): void {
    this.#relay?.stop();
    const [a, b] = [this.#caller, this.#dialled];
    this.#relay = a && b ? relayReinvites(this.#d.media, this.#call.id, [a, b], this.#d.log) : undefined;
  }
}

function userOf(dialog: Dialog): string | undefined {
  const uri = dialog.remoteTarget as { user?: string };
  return uri.user;
}
