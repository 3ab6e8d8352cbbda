import type { Logger } from '../config/index.js';
import { ReasonCodes, type ReasonCode } from '../events/index.js';
import type { LegMediaOptions, MediaService } from '../media/index.js';
import type { Dialog } from '../sip/stack/index.js';
import { relayReinvites, type BridgeLeg } from './reinvite-relay.js';
import type { CallRow } from '../store/index.js';
import type { CallLifecycle } from './lifecycle.js';
import type { CallBilling } from './live-call.js';

/**
 * A call between two SIP legs the switch bridges through rtpengine (B2BUA anchoring): an on-net call from one
 * extension to another. Either side's BYE ends both; ending frees the media and closes the CDR once.
 */
export class BridgedCall {
  readonly life: CallLifecycle;
  readonly #media: MediaService;
  readonly #log: Logger;
  readonly #billing: CallBilling | undefined;
  readonly #dialogs: Dialog[] = [];
  readonly #legs: BridgeLeg[] = [];
  readonly #onEnd: Array<() => void> = [];
  #ending: Promise<CallRow> | undefined;
  #answering: Promise<void> = Promise.resolve();

  constructor(deps: { media: MediaService; log: Logger; billing?: CallBilling }, life: CallLifecycle) {
    this.life = life;
    this.#media = deps.media;
    this.#log = deps.log;
    this.#billing = deps.billing;
  }

  get id(): string {
    return this.life.row.id;
  }

  get isEnding(): boolean {
    return this.#ending !== undefined;
  }

  onEnd(fn: () => void): void {
    this.#onEnd.push(fn);
  }

  /**
   * A leg of the bridge is up. With `media` (its tag in the media session and its profile) on both legs,
   * re-INVITEs (hold, resume, a new address) are relayed between them through rtpengine (reinvite-relay.ts).
   */
  attach(dialog: Dialog, media?: { tag: string; side: LegMediaOptions }): void {
    this.#dialogs.push(dialog);
    dialog.on('bye', () => void this.end(ReasonCodes.normalHangup, dialog));
    if (!media) return;
    this.#legs.push({ dialog, ...media });
    if (this.#legs.length === 2) {
      const [a, b] = this.#legs as [BridgeLeg, BridgeLeg];
      relayReinvites(this.#media, this.id, [a, b], this.#log);
    }
  }

  /** From answer: credit control starts (an end that races it waits for it: see #end). */
  answered(): Promise<void> {
    this.#answering = this.#answered();
    return this.#answering;
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

  end(reason: ReasonCode, byeFrom?: Dialog): Promise<CallRow> {
    this.#ending ??= this.#end(reason, byeFrom);
    return this.#ending;
  }

  async #end(reason: ReasonCode, byeFrom?: Dialog): Promise<CallRow> {
    for (const fn of this.#onEnd.splice(0)) fn();
    await Promise.all(this.#dialogs.filter((d) => d !== byeFrom).map((d) => d.bye().catch(() => undefined)));
    await this.#answering.catch(() => undefined);
    const endedAt = new Date();
    await this.#media.deleteSession(this.id).catch((e) => this.#log.warn({ err: e }, 'media session not deleted'));
    let settled: { costCents: number; talkSeconds: number } | undefined;
    if (this.life.isAnswered && this.#billing)
      settled = await this.#billing.callEnded(this.id, endedAt).catch(() => undefined);
    return this.life.end(reason, { at: endedAt, costCents: settled?.costCents, talkSeconds: settled?.talkSeconds });
  }
}
