import type { Logger } from '../config/index.js';
import type { LastGoodDocuments } from './prepaid/last-good.js';
import { fallbackPolicyOf } from './prepaid/fallback-message.js';
import { EventCodes, ReasonCodes, reportSystemError, type EventPublisher, type ReasonCode } from '../events/index.js';
import { MediaError } from '../media/index.js';
import type { Dialog } from '../sip/stack/index.js';
import { getAccountSettings, type AssetAudioSource, type CallRow, type Db } from '../store/index.js';
import {
  type CallControlEndUser,
  type DialResult,
  type DialOptions,
  type DialTarget,
  type HangupCause,
  type InterpreterStart,
  type SessionRecordingOptions,
  type VerbRegistry,
} from '../verbs/index.js';
import { systemClock, type Clock, type UrlPolicy } from '../kit/index.js';
import type { CallBilling } from './call-billing.js';
import type { CallMedia } from './call-media.js';
import { keepRecording } from './call-recording.js';
import { CallTeardown, type EndOptions } from './call-teardown.js';
import type { CallLifecycle } from './lifecycle.js';
import { BUSY, CALL_CONTROL_UNAVAILABLE, DECLINED, type SipRefusal, type UnansweredLeg } from './unanswered-leg.js';
import type { CallControlOutcome } from './call-engine.js';
import { RedirectableVerbs } from './call-redirect.js';
import { CallVerbs } from './verb-context.js';
import type { DigitSource } from './call-digits.js';
import { parseDtmfInfo } from './dtmf-info.js';
import type { SpeechInput } from './speech-input.js';
import type { QueueRegistry } from './queue/queue-registry.js';

export { CALLER_LEG } from './call-media.js';
export type { CallBilling } from './call-billing.js';

export interface LiveCallDeps {
  db: Db;
  /** This call's media (calls/call-media.ts: mediaOfCall over the switch's MediaService). */
  media: CallMedia;
  events: EventPublisher;
  log: Logger;
  billing?: CallBilling;
  /** The kit's system clock unless a test moves its own (a ManualClock). */
  clock?: Clock;
  webhookTimeoutMs: number;
  /** Where the account's webhook URLs may point (kit/url-policy.ts); default: public destinations only. */
  urlPolicy?: UrlPolicy;
  /** Runs the Dial verb (calls/flows/dial-verb.ts). */
  dialer?: (call: LiveCall, target: DialTarget, options: DialOptions) => Promise<DialResult>;
  recordingRetentionDays: number;
  /** Where assets not kept locally are fetched from (s3); local assets need nothing. */
  assetStorage?: AssetAudioSource;
  /** The recogniser for Gather input="speech" (calls/speech-input.ts); absent: a speech Gather hears nothing. */
  speech?: SpeechInput;
  /** This process's call queues (Enqueue, Dial Queue). */
  queues?: QueueRegistry;
  /** The last known good call-control documents (calls/prepaid/last-good.ts). */
  lastGood?: LastGoodDocuments;
  /** The classes that run each verb; VERB_REGISTRY unless a test injects a failing one. */
  verbRegistry?: () => VerbRegistry;
}

/**
 * One call the platform itself answers or places (an IVR leg): its SIP leg, its media, the verbs and the CDR.
 * The composition of two parts: CallVerbs (verb-context.ts), the VerbContext the interpreter runs verbs through,
 * and CallTeardown (call-teardown.ts), the one ordered, idempotent end. What is here decides when the caller's leg
 * is answered (the first verb that needs the line) and how the interpreter's hangup ends a call still ringing.
 */
export class LiveCall {
  readonly #d: LiveCallDeps;
  readonly life: CallLifecycle;
  readonly #clock: Clock;
  readonly #teardown: CallTeardown;
  readonly verbs: CallVerbs;
  /** The verbs' interpreters, one after the other as REST call control moves the call (call-redirect.ts). */
  readonly #runner: RedirectableVerbs;
  /** Keys sent into the call, one request after the other (POST /api/calls/{uuid}/digits). */
  #digits: Promise<unknown> = Promise.resolve();
  #dialog: Dialog | undefined;
  #endUser: CallControlEndUser | null = null;

  constructor(deps: LiveCallDeps, life: CallLifecycle) {
    this.#d = deps;
    this.life = life;
    this.#clock = deps.clock ?? systemClock;
    const recordings = { db: deps.db, clock: this.#clock, recordingRetentionDays: deps.recordingRetentionDays };
    this.#teardown = new CallTeardown({
      life,
      media: deps.media,
      log: deps.log,
      clock: this.#clock,
      billing: deps.billing,
      keepRecording: (r) => keepRecording(recordings, life, r),
    });
    const dialer = deps.dialer;
    this.verbs = new CallVerbs(
      {
        db: deps.db,
        media: deps.media,
        log: deps.log,
        clock: this.#clock,
        billing: deps.billing,
        webhookTimeoutMs: deps.webhookTimeoutMs,
        urlPolicy: deps.urlPolicy,
        assetStorage: deps.assetStorage,
        keepRecording: (r) => keepRecording(recordings, life, r),
        speech: deps.speech,
        queues: deps.queues,
        lastGood: deps.lastGood,
      },
      {
        life,
        needMedia: () => this.#needMedia(),
        hangup: (cause) => this.#hangup(cause),
        ...(dialer ? { dial: (target: DialTarget, options: DialOptions) => dialer(this, target, options) } : {}),
        endUser: () => this.#endUser,
        canReject: () => this.#teardown.ringingLeg !== undefined && !this.#teardown.answerInFlight && !this.isEnding,
        reject: (reason) => this.#reject(reason),
      },
    );
    this.#runner = new RedirectableVerbs(this.verbs, () => ({
      ...(deps.verbRegistry === undefined ? {} : { registry: deps.verbRegistry() }),
      onError: (error) => this.#platformFailed(error),
    }));
    this.#teardown.onEnd(() => void this.verbs.closeStreams());
  }

  get id(): string {
    return this.life.row.id;
  }

  get row(): CallRow {
    return this.life.row;
  }

  /** Something to undo when the call ends before it is up (a pending INVITE to CANCEL). */
  onEnd(fn: () => void): void {
    this.#teardown.onEnd(fn);
  }

  get isEnding(): boolean {
    return this.#teardown.isEnding;
  }

  setEndUser(u: CallControlEndUser | null): void {
    this.#endUser = u;
  }

  /** The SIP dialog of the caller's leg, once it is up. */
  get dialog(): Dialog | undefined {
    return this.#dialog;
  }

  /**
   * The caller's phone transferred the call (calls/transfer/dial-bridge.ts): `next` is the caller's leg from now
   * on (its BYE ends the call, it is BYEd at the end); the old leg is forgotten without a BYE here.
   */
  handOver(next: Dialog): void {
    if (this.#dialog) this.#teardown.legDown(this.#dialog);
    this.attachDialog(next);
  }

  /** The leg is up (2xx sent or received): watch for the far end's BYE. */
  attachDialog(dialog: Dialog): void {
    this.#dialog = dialog;
    this.#teardown.legUp(dialog);
    // Only the caller's leg now ends the call: a leg a transfer handed over (handOver) no longer does.
    dialog.on(
      'bye',
      () => void (this.#dialog === dialog && this.end(ReasonCodes.normalHangup, { remoteHungUp: true })),
    );
    // RFC 4028: the caller stopped refreshing its session timer (or our refresh failed): BYE and END.0422.
    dialog.on('session-expired', () => void this.end(ReasonCodes.sessionExpired));
    // SIP INFO keys (application/dtmf-relay, application/dtmf): answered 200 and given to the verbs like any key.
    dialog.on('info', (req, srv) => {
      srv.send(200);
      const key = parseDtmfInfo(req.contentType, req.body);
      if (key) this.digitPressed(key.digit, 'sip-info', key.durationMs);
    });
  }

  /**
   * The caller's INVITE stays unanswered (ringing) while the verbs need no media: the first verb that does
   * (Say, Play, Record, RecordSession, Dial, Pause, or the fallback's message or audio) answers it, so billing
   * starts there. A call that ends before that is refused with a final status that says why and never billed:
   * 603 when the document hangs up, 500 when the first document could not be fetched and the fallback drops.
   */
  answerWhenNeeded(leg: UnansweredLeg): void {
    this.#teardown.legRinging(leg);
  }

  async #needMedia(): Promise<void> {
    const leg = this.#teardown.ringingLeg;
    if (!leg) return;
    if (!this.#teardown.answerInFlight) {
      this.#teardown.answering(
        leg.answer().catch((e: unknown) => {
          this.#d.log.warn({ err: e, call: this.row.sid }, 'call could not be answered');
          void this.end(this.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
          throw e;
        }),
      );
    }
    await this.#teardown.answerInFlight;
  }

  /** From answer: credit control starts (an end that races it waits for it: see CallTeardown). */
  answered(): Promise<void> {
    const start = this.#answered();
    this.#teardown.billingStarting(start);
    return start;
  }

  async #answered(): Promise<void> {
    const ok = await this.life.answered(new Date(this.#clock.now()));
    if (!ok || this.isEnding) return;
    try {
      await this.#d.billing?.callAnswered({
        callId: this.id,
        accountId: this.row.account_id,
        direction: this.row.direction,
        to: this.row.to_number,
        answeredAt: new Date(this.row.answered_at!),
      });
    } catch (e) {
      // A call that cannot be rated (no rate covers the destination) is not carried for free: it is cut at once.
      this.#d.log.error({ err: e, call: this.row.sid }, 'call could not be rated; cut');
      void this.end(ReasonCodes.rejected); // not awaited: the end waits for this answer to finish
    }
  }

  /** Runs verb documents from `start` until they end, then hangs up (the interpreter calls hangup()). */
  async runVerbs(start: InterpreterStart): Promise<void> {
    const account = await getAccountSettings(this.#d.db, this.row.account_id);
    this.verbs.useFallback(fallbackPolicyOf(account));
    if ('url' in start) this.verbs.expectCallControl(start.url);
    if (this.isEnding) return; // ended (CANCEL, API hangup) before the first document was asked for
    this.#teardown.verbsRunning(() => this.#runner.stop());
    const end = await this.#runner.run(start);
    await this.end(end.reason === 'error' ? ReasonCodes.platformFailure : ReasonCodes.normalHangup);
  }

  /**
   * Something inside the platform failed while the verbs ran (a bug, a broken engine): SYS.0500 with a trace id
   * for support, the error itself only in the log. The interpreter then runs the account's fallback and the call
   * ends with reason SYS.0500, never as a normal hangup.
   */
  #platformFailed(error: unknown): void {
    void reportSystemError(error, {
      publisher: this.#d.events,
      operation: 'verbs',
      accountId: this.row.account_id,
      callId: this.id,
      sid: this.row.sid,
      logger: this.#d.log,
    });
  }

  /**
   * Speaks a short notice to the unanswered caller as early media (183 with SDP), then refuses the call with
   * `refusal` and ends it as failed with `reason`: never answered, never billed (END.0501: an end-user dialled
   * out and the account has no voice_outbound webhook).
   */
  async refuseWithNotice(text: string, reason: ReasonCode, refusal: SipRefusal, language?: string): Promise<CallRow> {
    const leg = this.#teardown.ringingLeg;
    try {
      if (leg && !this.isEnding) {
        await leg.earlyMedia();
        await this.life.progress();
        if (!this.isEnding) await this.#d.media.say(text, language === undefined ? {} : { language });
      }
    } catch (e) {
      this.#d.log.warn({ err: e, call: this.row.sid }, 'notice not spoken');
    }
    this.#teardown.refuseWith(refusal);
    return this.end(reason, { failed: true });
  }

  /** Ends the call once, whoever asks (API hangup, BYE, billing cut, end of verbs, shutdown): CallTeardown. */
  /** Its media engine was lost for good (CallTeardown.mediaFailed): END.0502, billed to `at`. */
  mediaFailed(at: number): Promise<CallRow> {
    return this.#teardown.mediaFailed(at);
  }

  /** When the call's media stopped for good, if its engine was lost (a Dial's leg ends and is billed there too). */
  get mediaFailedAt(): number | undefined {
    return this.#teardown.mediaFailedAt;
  }

  end(reason: ReasonCode, opts: EndOptions = {}): Promise<CallRow> {
    return this.#teardown.end(reason, opts);
  }

  /** A key the caller pressed: RFC 4733 (rtpengine's DTMF log), SIP INFO, or in-band tones in its audio. */
  digitPressed(digit: string, source: DigitSource = 'rfc4733-log', durationMs = 0): void {
    this.verbs.digitPressed(digit, source, durationMs);
  }

  /** Reject: refuse the ringing call, unanswered and unbilled, as busy (486) or declined (603). */
  #reject(reason: 'busy' | 'rejected'): void {
    this.#teardown.refuseWith(reason === 'busy' ? BUSY : DECLINED);
    void this.end(reason === 'busy' ? ReasonCodes.busy : ReasonCodes.rejected, { failed: true });
  }

  /**
   * REST call update: the running verb is interrupted and `start` runs instead (before the verbs start, it is where
   * they start). CALL.0210 on the call says so. Refused once the call is ending.
   */
  redirect(start: InterpreterStart, source: 'url' | 'twiml'): CallControlOutcome {
    if (this.isEnding || !this.#runner.redirect(start)) return 'not_held';
    void this.life.emit(EventCodes.callRedirected, 'url' in start ? { source, url: start.url } : { source });
    return 'ok';
  }

  /** Keys into the answered call towards its leg, after any keys already being sent (REST /digits). */
  sendDigits(digits: string): Promise<CallControlOutcome> {
    if (this.isEnding) return Promise.resolve('not_held');
    if (!this.life.isAnswered) return Promise.resolve('not_answered');
    const send = this.#digits.then(async (): Promise<CallControlOutcome> => {
      if (this.isEnding) return 'not_held';
      try {
        await this.#d.media.sendDigits(digits);
        return 'ok';
      } catch (e) {
        if (e instanceof MediaError && e.code === 'MEDIA_LEG_BRIDGED') return 'bridged';
        if (e instanceof MediaError && e.code === 'MEDIA_NO_SESSION') return 'not_held';
        throw e;
      }
    });
    this.#digits = send.catch(() => undefined);
    return send;
  }

  /** RecordSession, also asked by a Dial with `record` (calls/flows/dial-verb.ts). */
  startSessionRecording(options: SessionRecordingOptions): Promise<void> {
    return this.verbs.startSessionRecording(options);
  }

  #hangup(cause?: HangupCause): void {
    const failed = cause === 'error' ? ReasonCodes.platformFailure : undefined;
    if (this.#teardown.ringingLeg && !this.#teardown.answerInFlight) {
      // Nothing needed media: refuse the call unanswered and unbilled (docs/api.md, "Inbound calls").
      const control = cause === 'fallback' || cause === 'redirect_limit' || cause === 'error';
      this.#teardown.refuseWith(control ? CALL_CONTROL_UNAVAILABLE : DECLINED);
      void this.end(failed ?? (control ? ReasonCodes.carrierFailure : ReasonCodes.rejected), { failed: true });
      return;
    }
    void this.end(failed ?? ReasonCodes.normalHangup);
  }
}
