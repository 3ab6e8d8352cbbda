import type { Logger } from '../config/index.js';
import { ReasonCodes, type ReasonCode } from '../events/index.js';
import { systemClock, type Clock } from '../kit/index.js';
import type { LegMediaOptions, MediaService } from '../media/index.js';
import type { Dialog } from '../sip/stack/index.js';
import type { CallRow } from '../store/index.js';
import type { CallBilling } from './call-billing.js';
import { CallTeardown } from './call-teardown.js';
import type { CallLifecycle } from './call-lifecycle.js';
import { relayReinvites } from './reinvite-relay.js';
import type { TransferableBridge, TransferLeg } from './transfer/transfer-bridge.js';

export interface BridgedCallDeps {
  /** The bridge's media session: re-offers and answers of relayed re-INVITEs and, at the end, deleteSession. */
  media: Pick<MediaService, 'offer' | 'answer' | 'deleteSession'>;
  log: Logger;
  billing?: CallBilling;
  /** The kit's system clock unless a test moves its own (a ManualClock). */
  clock?: Pick<Clock, 'now'>;
  /** Both legs are up: phones on them may transfer the call from now on (calls/transfer/). */
  onBridged?: (call: BridgedCall, legs: TransferLeg[]) => void;
}

/**
 * A call between two SIP legs the switch bridges through rtpengine (B2BUA anchoring): an on-net call from one
 * extension to another. Either side's BYE ends both. The end is CallTeardown's (calls/call-teardown.ts), the same
 * ordered, idempotent end as a LiveCall's: hooks → BYE to every leg up but the one that hung up → the media
 * session deleted → settlement → the CDR, once. A transfer (REFER) may replace one leg by another
 * (TransferableBridge); the call goes on with the new pair.
 */
export class BridgedCall implements TransferableBridge {
  readonly life: CallLifecycle;
  readonly #media: BridgedCallDeps['media'];
  readonly #log: Logger;
  readonly #billing: CallBilling | undefined;
  readonly #teardown: CallTeardown;
  readonly #legs: TransferLeg[] = [];
  readonly #onBridged: BridgedCallDeps['onBridged'];
  /** Each leg's BYE listener, taken off when a transfer moves the leg out. */
  readonly #byeListeners = new Map<Dialog, () => void>();
  #relay: { stop(): void } | undefined;

  constructor(deps: BridgedCallDeps, life: CallLifecycle) {
    this.life = life;
    this.#media = deps.media;
    this.#log = deps.log;
    this.#billing = deps.billing;
    this.#onBridged = deps.onBridged;
    this.#teardown = new CallTeardown({
      life,
      media: { close: () => deps.media.deleteSession(life.row.id) },
      log: deps.log,
      clock: deps.clock ?? systemClock,
      billing: deps.billing,
    });
  }

  get id(): string {
    return this.life.row.id;
  }

  get isEnding(): boolean {
    return this.#teardown.isEnding;
  }

  /** Something to undo as the call starts ending (a call slot to free, a pending INVITE to CANCEL). */
  onEnd(fn: () => void): void {
    this.#teardown.onEnd(fn);
  }

  /**
   * A leg of the bridge is up. With `media` (its tag in the media session and its profile) on both legs,
   * re-INVITEs (hold, resume, a new address) are relayed between them through rtpengine (reinvite-relay.ts).
   */
  attach(dialog: Dialog, media?: { tag: string; side: LegMediaOptions }): void {
    this.#watchBye(dialog);
    if (!media) return;
    // Tag A is the caller's leg (from_number), B the callee's (to_number).
    const row = this.life.row;
    this.#legs.push({ dialog, ...media, party: media.tag === 'A' ? row.from_number : row.to_number });
    if (this.#legs.length === 2) {
      this.#relayBetweenLegs();
      this.#onBridged?.(this, [...this.#legs]);
    }
  }

  #watchBye(dialog: Dialog): void {
    this.#teardown.legUp(dialog);
    const onBye = () => void this.end(ReasonCodes.normalHangup, dialog);
    this.#byeListeners.set(dialog, onBye);
    dialog.on('bye', onBye);
    // RFC 4028: a leg's session timer ran out: both legs get BYE (END.0422).
    dialog.on('session-expired', () => void this.end(ReasonCodes.sessionExpired));
  }

  #relayBetweenLegs(): void {
    this.#relay?.stop();
    const [a, b] = this.#legs;
    if (!a || !b) return;
    this.#relay = relayReinvites(this.#media, this.id, [a, b], this.#log);
  }

  /** The legs up now (two once bridged). */
  legs(): readonly TransferLeg[] {
    return this.#legs;
  }

  legOf(dialog: Dialog): TransferLeg | undefined {
    return this.#legs.find((l) => l.dialog === dialog);
  }

  otherLeg(dialog: Dialog): TransferLeg | undefined {
    return this.#legs.length === 2 && this.legOf(dialog) ? this.#legs.find((l) => l.dialog !== dialog) : undefined;
  }

  replaceLeg(old: TransferLeg, next: TransferLeg): void {
    this.releaseLeg(old);
    this.#watchBye(next.dialog);
    this.#legs.push(next);
    if (this.#legs.length === 2) this.#relayBetweenLegs();
  }

  releaseLeg(leg: TransferLeg): void {
    const i = this.#legs.indexOf(leg);
    if (i < 0) return;
    this.#legs.splice(i, 1);
    this.#relay?.stop();
    this.#relay = undefined;
    const onBye = this.#byeListeners.get(leg.dialog);
    if (onBye) leg.dialog.off('bye', onBye);
    this.#byeListeners.delete(leg.dialog);
    this.#teardown.legDown(leg.dialog);
  }

  /** From answer: credit control starts (an end that races it waits for it: see CallTeardown). */
  answered(): Promise<void> {
    const start = this.#answered();
    this.#teardown.billingStarting(start);
    return start;
  }

  async #answered(): Promise<void> {
    if (!(await this.life.answered()) || this.isEnding) return;
    const row = this.life.row;
    try {
      await this.#billing?.callAnswered({
        callId: row.id,
        accountId: row.account_id,
        direction: row.direction,
        to: row.to_number,
        answeredAt: new Date(row.answered_at!),
      });
    } catch (e) {
      this.#log.error({ err: e, call: row.sid }, 'call could not be rated; cut');
      void this.end(ReasonCodes.rejected); // not awaited: the end waits for this answer to finish
    }
  }

  /** Its media engine was lost for good (CallTeardown.mediaFailed): both legs BYEd, END.0502, billed to `at`. */
  mediaFailed(at: number): Promise<CallRow> {
    return this.#teardown.mediaFailed(at);
  }

  /** Ends both legs once, whoever asks; `byeFrom` is the leg whose far end hung up (it gets no BYE back). */
  end(reason: ReasonCode, byeFrom?: Dialog): Promise<CallRow> {
    return this.#teardown.end(reason, { byeFrom });
  }
}
