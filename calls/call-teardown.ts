import type { Logger } from '../config/index.js';
import { ReasonCodes, type ReasonCode } from '../events/index.js';
import type { RecordingResult } from '../media/index.js';
import type { CallRow } from '../store/index.js';
import type { Clock } from '../kit/index.js';
import type { CallBilling } from './call-billing.js';
import type { CallMedia } from './call-media.js';
import type { CallLifecycle } from './lifecycle.js';
import { refusalFor, type SipRefusal, type UnansweredLeg } from './unanswered-leg.js';

export interface CallTeardownDeps {
  life: CallLifecycle;
  /** Only its close() is used: a bridged call hands in its media session's close. */
  media: Pick<CallMedia, 'close'>;
  log: Logger;
  clock: Pick<Clock, 'now'>;
  billing?: CallBilling;
  /**
   * Keeps the RecordSession file the media hands back when it closes (calls/call-recording.ts). Absent for a
   * call that runs no verbs (a bridged call), which never starts one.
   */
  keepRecording?(r: RecordingResult): Promise<unknown>;
}

/** What the end needs of a leg's dialog once it is up: a BYE. */
export interface ByeDialog {
  bye(): Promise<unknown>;
}

export interface EndOptions {
  /** The far end sent BYE: nothing to send it. */
  remoteHungUp?: boolean;
  /** The leg whose far end sent BYE (a bridge): every other leg up is sent one, this one not. */
  byeFrom?: ByeDialog;
  /** `failed` even if it was answered (a refused call that played early media). */
  failed?: boolean;
  /** When the call ended if not now (epoch ms): its media stopped then, so the CDR and the bill stop there too. */
  endedAt?: number;
}

/**
 * The end of a call, and what that end must undo: the running verbs, hooks of the flow (a pending INVITE to
 * CANCEL, a call slot to free), the caller's leg (ringing, being answered, or up) or both legs of a bridge, the
 * credit control started at answer. Both kinds of call end through it: LiveCall (the platform answers or places
 * it, verbs run) and BridgedCall (two SIP legs through rtpengine, no verbs). Ending is idempotent (every end()
 * returns the one promise of the first) and always in this order:
 *
 *   stop the verbs → hooks → the legs: refuse one while it rings, BYE each one up (not the one whose far end
 *   hung up) → close the media (a RecordSession file is kept) → settle billing (answered calls) → close the CDR,
 *   which emits CALL.0300 or CALL.0400.
 *
 * An answer under way when the end starts is waited for (a 200 already sent is BYEd, not left up), and so is the
 * start of credit control (the settlement sees the answer it started).
 */
export class CallTeardown {
  readonly #d: CallTeardownDeps;
  #ending: Promise<CallRow> | undefined;
  #stopVerbs: (() => void) | undefined;
  readonly #hooks: Array<() => void> = [];
  readonly #dialogs: ByeDialog[] = [];
  #ringing: UnansweredLeg | undefined;
  #answerInFlight: Promise<void> | undefined;
  #billingStart: Promise<void> = Promise.resolve();
  #refusal: SipRefusal | undefined;
  #mediaFailedAt: number | undefined;

  constructor(deps: CallTeardownDeps) {
    this.#d = deps;
  }

  get isEnding(): boolean {
    return this.#ending !== undefined;
  }

  /** The verbs now running (the interpreter's kill): stopped first. */
  verbsRunning(stop: () => void): void {
    this.#stopVerbs = stop;
  }

  /** Something to undo when the call ends, run right after the verbs stop. */
  onEnd(fn: () => void): void {
    this.#hooks.push(fn);
  }

  /** The caller's INVITE, not answered yet: refused at the end unless an answer took it. */
  legRinging(leg: UnansweredLeg): void {
    this.#ringing = leg;
  }

  get ringingLeg(): UnansweredLeg | undefined {
    return this.#ringing;
  }

  /** The ringing leg is being answered; `answer` settles when it is up (then it rings no more) or failed. */
  answering(answer: Promise<void>): void {
    this.#answerInFlight = answer.then(() => void (this.#ringing = undefined));
  }

  get answerInFlight(): Promise<void> | undefined {
    return this.#answerInFlight;
  }

  /** A leg is up (2xx sent or received): BYEd at the end. A bridge has two. */
  legUp(dialog: ByeDialog): void {
    if (!this.#dialogs.includes(dialog)) this.#dialogs.push(dialog);
  }

  /** A leg left the call without ending it (a transfer moved it elsewhere or replaced it): it gets no BYE here. */
  legDown(dialog: ByeDialog): void {
    const i = this.#dialogs.indexOf(dialog);
    if (i >= 0) this.#dialogs.splice(i, 1);
  }

  /** Credit control is starting (billing.callAnswered): the end waits for it before it settles. */
  billingStarting(start: Promise<void>): void {
    this.#billingStart = start;
  }

  /** The final status a ringing leg gets at the end (the first one set wins); else one for the end's reason. */
  refuseWith(refusal: SipRefusal): void {
    this.#refusal ??= refusal;
  }

  /** When the call's media stopped for good (its engine was lost), if that is how it ends. */
  get mediaFailedAt(): number | undefined {
    return this.#mediaFailedAt;
  }

  /**
   * The media engine holding the call was lost and the call did not come back with it: ended with END.0502,
   * every leg BYEd, billed and closed as of `at`, the moment its media stopped (the account never pays for the
   * dead air after it). A call already ending keeps its own end.
   */
  mediaFailed(at: number): Promise<CallRow> {
    if (!this.isEnding) this.#mediaFailedAt = at;
    return this.end(ReasonCodes.mediaFailure, { endedAt: at });
  }

  /** Ends the call once, whoever asks (API hangup, BYE, billing cut, end of verbs, shutdown). */
  end(reason: ReasonCode, opts: EndOptions = {}): Promise<CallRow> {
    this.#ending ??= this.#end(reason, opts);
    return this.#ending;
  }

  async #end(reason: ReasonCode, opts: EndOptions): Promise<CallRow> {
    const { life, media, log, billing } = this.#d;
    this.#stopVerbs?.();
    for (const fn of this.#hooks.splice(0)) fn();
    await this.#answerInFlight?.catch(() => undefined);
    if (this.#ringing) this.#ringing.refuse(this.#refusal ?? refusalFor(reason));
    const byes = opts.remoteHungUp ? [] : this.#dialogs.filter((d) => d !== opts.byeFrom);
    await Promise.all(byes.map((d) => d.bye().catch(() => undefined)));
    await this.#billingStart.catch(() => undefined);
    const now = this.#d.clock.now();
    const endedAt = new Date(opts.endedAt === undefined ? now : Math.min(opts.endedAt, now));
    const closed = await media.close().catch((e) => {
      log.warn({ err: e, call: life.row.sid }, 'media session not deleted');
      return {} as { sessionRecording?: RecordingResult };
    });
    if (closed.sessionRecording && this.#d.keepRecording)
      await this.#d.keepRecording(closed.sessionRecording).catch(() => undefined);
    let settled: { costCents: number } | undefined;
    if (life.isAnswered && billing) {
      settled = await billing.callEnded(life.row.id, endedAt).catch((e) => {
        log.error({ err: e, call: life.row.sid }, 'settlement failed; the reconcile sweep retries it');
        return undefined;
      });
    }
    return life.end(reason, {
      at: endedAt,
      costCents: settled?.costCents,
      failed: opts.failed,
    });
  }
}
