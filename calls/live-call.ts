import type { Logger } from '../config/index.js';
import { EventCodes, ReasonCodes, reportSystemError, type EventPublisher, type ReasonCode } from '../events/index.js';
import { MediaError, type MediaService, type RecordingResult } from '../media/index.js';
import type { Dialog } from '../sip/stack/index.js';
import {
  getAccount,
  insertRecording,
  findPlayableAsset,
  recordingRetentionDaysFor,
  type AssetAudioSource,
  type CallRow,
  type Db,
} from '../store/index.js';
import {
  Interpreter,
  callControlFetcher,
  type CallControlEndUser,
  type DialResult,
  type DialOptions,
  type DialTarget,
  type FallbackPolicy,
  type HangupCause,
  type InterpreterStart,
  type PlayResult,
  type PlaySource,
  type RecordOptions,
  type RecordResult,
  type VerbContext,
  type VerbDocument,
  type VerbEvent,
  type ActionCallbackExtras,
  type SayOptions,
  type SessionRecordingOptions,
} from '../verbs/index.js';
import type { CallLifecycle } from './lifecycle.js';
import {
  CALL_CONTROL_UNAVAILABLE,
  DECLINED,
  refusalFor,
  type SipRefusal,
  type UnansweredLeg,
} from './unanswered-leg.js';
import type { UrlPolicy } from '../kit/index.js';

/** The platform's own leg of an IVR call is tagged 'A' in the media session (see media/README.md). */
export const CALLER_LEG = 'A';

/** Billing as a live call sees it (billing/CreditMonitor); absent in set-ups without credit control. */
export interface CallBilling {
  callAnswered(a: {
    callId: string;
    accountId: string;
    direction: 'inbound' | 'outbound' | 'internal';
    to: string;
    answeredAt: Date;
  }): Promise<void>;
  ttsUsed(callId: string, seconds: number, tier?: string): void;
  callEnded(callId: string, endedAt: Date): Promise<{ costCents: number; talkSeconds: number }>;
}

export interface LiveCallDeps {
  db: Db;
  media: MediaService;
  events: EventPublisher;
  log: Logger;
  billing?: CallBilling;
  webhookTimeoutMs: number;
  /** Where the account's webhook URLs may point (kit/url-policy.ts); default: public destinations only. */
  urlPolicy?: UrlPolicy;
  /** Runs the Dial verb (calls/flows/dial-verb.ts). */
  dialer?: (call: LiveCall, target: DialTarget, options: DialOptions) => Promise<DialResult>;
  recordingRetentionDays: number;
  /** Where assets not kept locally are fetched from (s3); local assets need nothing. */
  assetStorage?: AssetAudioSource;
}

/**
 * One call the platform itself answers or places (an IVR leg): its SIP dialog, its media session, the verb
 * interpreter and the CDR. It is the VerbContext the interpreter runs verbs through. Ending is idempotent and
 * always in this order: stop the verbs, BYE the leg if it is still up, free the media, settle billing, close
 * the CDR (which emits CALL.0300 or CALL.0400).
 */
export class LiveCall implements VerbContext {
  readonly #d: LiveCallDeps;
  readonly life: CallLifecycle;
  #dialog: Dialog | undefined;
  #interpreter: Interpreter | undefined;
  #ending: Promise<CallRow> | undefined;
  #fallback: FallbackPolicy = { mode: 'drop', value: '' };
  #endUser: CallControlEndUser | null = null;
  readonly #onEnd: Array<() => void> = [];
  readonly #digitListeners = new Set<(digit: string) => void>();
  #answering: Promise<void> = Promise.resolve();
  /** The caller's INVITE while it is not answered (see answerWhenNeeded), and the answer once it is under way. */
  #unanswered: UnansweredLeg | undefined;
  #answerInFlight: Promise<void> | undefined;
  #refusal: SipRefusal | undefined;

  constructor(deps: LiveCallDeps, life: CallLifecycle) {
    this.#d = deps;
    this.life = life;
  }

  get id(): string {
    return this.life.row.id;
  }

  get row(): CallRow {
    return this.life.row;
  }

  get fallback(): FallbackPolicy {
    return this.#fallback;
  }

  /** Something to undo when the call ends before it is up (a pending INVITE to CANCEL). */
  onEnd(fn: () => void): void {
    this.#onEnd.push(fn);
  }

  get isEnding(): boolean {
    return this.#ending !== undefined;
  }

  setEndUser(u: CallControlEndUser | null): void {
    this.#endUser = u;
  }

  /** The SIP dialog of the caller's leg, once it is up. */
  get dialog(): Dialog | undefined {
    return this.#dialog;
  }

  /** The leg is up (2xx sent or received): watch for the far end's BYE. */
  attachDialog(dialog: Dialog): void {
    this.#dialog = dialog;
    dialog.on('bye', () => void this.end(ReasonCodes.normalHangup, { remoteHungUp: true }));
  }

  /**
   * The caller's INVITE stays unanswered (ringing) while the verbs need no media: the first verb that does
   * (Say, Play, Record, RecordSession, Dial, Pause, or the fallback's message or audio) answers it, so billing
   * starts there. A call that ends before that is refused with a final status that says why and never billed:
   * 603 when the document hangs up, 500 when the first document could not be fetched and the fallback drops.
   */
  answerWhenNeeded(leg: UnansweredLeg): void {
    this.#unanswered = leg;
  }

  async #needMedia(): Promise<void> {
    const leg = this.#unanswered;
    if (!leg) return;
    this.#answerInFlight ??= leg.answer().then(
      () => void (this.#unanswered = undefined),
      (e: unknown) => {
        this.#d.log.warn({ err: e, call: this.row.sid }, 'call could not be answered');
        void this.end(this.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
        throw e;
      },
    );
    await this.#answerInFlight;
  }

  /** From answer: credit control starts (an end that races it waits for it: see #end). */
  answered(): Promise<void> {
    this.#answering = this.#answered();
    return this.#answering;
  }

  async #answered(): Promise<void> {
    const ok = await this.life.answered();
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
    const account = await getAccount(this.#d.db, this.row.account_id);
    this.#fallback = { mode: account.fallback_mode, value: account.fallback_value };
    if (this.isEnding) return; // ended (CANCEL, API hangup) before the first document was asked for
    this.#interpreter = new Interpreter(this);
    const end = await this.#interpreter.run(start);
    if (end.reason === 'error') {
      reportSystemError(end.error, {
        publisher: this.#d.events,
        operation: 'verbs',
        accountId: this.row.account_id,
        callId: this.id,
        sid: this.row.sid,
      });
    }
    await this.end(ReasonCodes.normalHangup);
  }

  /**
   * Speaks a short notice to the unanswered caller as early media (183 with SDP), then refuses the call with
   * `refusal` and ends it as failed with `reason`: never answered, never billed (END.0501: an end-user dialled
   * out and the account has no voice_outbound webhook).
   */
  async refuseWithNotice(text: string, reason: ReasonCode, refusal: SipRefusal): Promise<CallRow> {
    const leg = this.#unanswered;
    try {
      if (leg && !this.isEnding) {
        await leg.earlyMedia();
        await this.life.progress();
        if (!this.isEnding) await this.#d.media.say(this.id, CALLER_LEG, text);
      }
    } catch (e) {
      this.#d.log.warn({ err: e, call: this.row.sid }, 'notice not spoken');
    }
    this.#refusal ??= refusal;
    return this.end(reason, { failed: true });
  }

  /** Ends the call once, whoever asks (API hangup, BYE, billing cut, end of verbs, shutdown). */
  end(reason: ReasonCode, opts: { remoteHungUp?: boolean; failed?: boolean } = {}): Promise<CallRow> {
    this.#ending ??= this.#end(reason, opts);
    return this.#ending;
  }

  async #end(reason: ReasonCode, opts: { remoteHungUp?: boolean; failed?: boolean }): Promise<CallRow> {
    this.#interpreter?.kill();
    for (const fn of this.#onEnd.splice(0)) fn();
    await this.#answerInFlight?.catch(() => undefined); // a 200 already sent is BYEd, not left up
    if (this.#unanswered) this.#unanswered.refuse(this.#refusal ?? refusalFor(reason));
    if (this.#dialog && !opts.remoteHungUp) await this.#dialog.bye().catch(() => undefined);
    await this.#answering.catch(() => undefined);
    const endedAt = new Date();
    const media = await this.#d.media.deleteSession(this.id).catch((e) => {
      this.#d.log.warn({ err: e, call: this.row.sid }, 'media session not deleted');
      return {} as { sessionRecording?: RecordingResult };
    });
    if (media.sessionRecording) await this.#storeRecording(media.sessionRecording).catch(() => undefined);
    let settled: { costCents: number; talkSeconds: number } | undefined;
    if (this.life.isAnswered && this.#d.billing) {
      settled = await this.#d.billing.callEnded(this.id, endedAt).catch((e) => {
        this.#d.log.error({ err: e, call: this.row.sid }, 'settlement failed; the reconcile sweep retries it');
        return undefined;
      });
    }
    return this.life.end(reason, {
      at: endedAt,
      costCents: settled?.costCents,
      talkSeconds: settled?.talkSeconds,
      failed: opts.failed,
    });
  }

  // ---- VerbContext ----

  async say(text: string, options: SayOptions): Promise<void> {
    await this.#needMedia();
    const r = await this.#d.media.say(this.id, CALLER_LEG, text, {
      voice: options.voice,
      language: options.language,
      signal: options.signal,
    });
    await this.life.addTtsSeconds(r.ttsSeconds);
    this.#d.billing?.ttsUsed(this.id, r.ttsSeconds, r.tier);
    await this.life.emit(EventCodes.ttsGenerated, { seconds: r.ttsSeconds, tier: r.tier });
  }

  async play(source: PlaySource, options: { readonly signal: AbortSignal }): Promise<PlayResult> {
    await this.#needMedia();
    if (source.kind === 'asset') {
      // Absent, inactive or without audio: PLAY.0404 and the next verb (spec, Play).
      const file = await findPlayableAsset(this.#d.db, this.row.account_id, source.name, this.#d.assetStorage);
      if (!file) return 'asset_missing';
      await this.#d.media.playFile(this.id, CALLER_LEG, file, { signal: options.signal });
      return 'played';
    }
    try {
      await this.#d.media.playUrl(this.id, CALLER_LEG, source.url, { signal: options.signal });
      return 'played';
    } catch (e) {
      if (e instanceof MediaError) {
        this.#d.log.info({ call: this.row.sid, url: source.url, code: e.code }, 'audio not playable; next verb');
        return 'asset_missing';
      }
      throw e;
    }
  }

  async dial(target: DialTarget, options: DialOptions): Promise<DialResult> {
    await this.#needMedia();
    if (!this.#d.dialer) return { status: 'failed', durationSeconds: 0 };
    return this.#d.dialer(this, target, options);
  }

  /** A key the caller pressed (RFC 4733, through rtpengine's DTMF log). */
  digitPressed(digit: string): void {
    for (const fn of [...this.#digitListeners]) fn(digit);
  }

  /**
   * Record: a beep first (playBeep), then the caller's audio until silence, maxLength, a key of finishOnKey
   * (the recording is kept), or the verb being killed.
   */
  async record(options: RecordOptions): Promise<RecordResult> {
    await this.#needMedia();
    if (options.playBeep) await this.#d.media.playBeep(this.id, CALLER_LEG, { signal: options.signal });
    if (options.signal.aborted) return { durationSeconds: 0 };
    await this.life.emit(EventCodes.recordingStarted, {});
    const finished = new AbortController();
    const onDigit = (digit: string) => {
      if (options.finishOnKey.includes(digit)) finished.abort();
    };
    this.#digitListeners.add(onDigit);
    let r: RecordingResult;
    try {
      r = await this.#d.media.record(this.id, CALLER_LEG, {
        maxLengthSec: options.maxLength,
        silenceTimeoutSec: options.timeout,
        signal: AbortSignal.any([options.signal, finished.signal]),
      });
    } finally {
      this.#digitListeners.delete(onDigit);
    }
    const rec = await this.#storeRecording(r);
    // RecordingPath is the Recording's uuid (what POST /api/recordings/download takes), never the file's place on
    // this server: an absolute path told every customer the data directory's layout (issue 22, item 13).
    return { durationSeconds: Math.round(r.durationSec), path: rec.id };
  }

  /**
   * RecordSession (and Dial's `record`): from now until the call ends, the caller on one channel and what it
   * hears on the other (our prompts, and any leg a Dial bridges it to). Stored and announced (REC.0300) when the
   * call ends. A second one while recording changes nothing. If it cannot start, the call goes on unrecorded.
   */
  async startSessionRecording(options: SessionRecordingOptions): Promise<void> {
    await this.#needMedia();
    if (this.#d.media.isRecording(this.id)) return;
    try {
      await this.#d.media.startCallRecording(this.id, CALLER_LEG, {
        maxLengthSec: options.maxLength,
        mono: options.channels === 'mono',
      });
    } catch (e) {
      if (!(e instanceof MediaError)) throw e;
      this.#d.log.warn({ err: e, call: this.row.sid }, 'RecordSession could not start; the call goes on unrecorded');
      return;
    }
    await this.life.emit(EventCodes.recordingStarted, {});
  }

  async pause(seconds: number, options: { readonly signal: AbortSignal }): Promise<void> {
    await this.#needMedia(); // a Pause first answers: silence on an answered line, as the caller expects
    return new Promise((resolve) => {
      const t = setTimeout(resolve, seconds * 1000);
      options.signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
  }

  async hangup(cause?: HangupCause): Promise<void> {
    if (this.#unanswered && !this.#answerInFlight) {
      // Nothing needed media: refuse the call unanswered and unbilled (docs/api.md, "Inbound calls").
      const control = cause === 'fallback' || cause === 'redirect_limit' || cause === 'error';
      this.#refusal ??= control ? CALL_CONTROL_UNAVAILABLE : DECLINED;
      void this.end(control ? ReasonCodes.carrierFailure : ReasonCodes.rejected, { failed: true });
      return;
    }
    void this.end(ReasonCodes.normalHangup);
  }

  async fetchDocument(
    url: string,
    extras: ActionCallbackExtras,
    options: { readonly signal: AbortSignal },
  ): Promise<VerbDocument> {
    // The secret is read per request: a rotation takes effect for every later request (spec, Authentication 6).
    const account = await getAccount(this.#d.db, this.row.account_id);
    const fetcher = callControlFetcher({
      call: () => ({
        sid: this.row.sid,
        accountUuid: this.row.account_id,
        direction: this.row.direction === 'inbound' ? 'inbound' : 'outbound',
        from: this.row.from_number,
        to: this.row.to_number,
        customPayload: this.row.custom_payload ? JSON.parse(this.row.custom_payload) : null,
        endUser: this.#endUser,
      }),
      secret: account.signing_secret,
      timeoutMs: this.#d.webhookTimeoutMs,
      ...(this.#d.urlPolicy === undefined ? {} : { urlPolicy: this.#d.urlPolicy }),
    });
    return fetcher(url, extras, options);
  }

  async setCustomPayload(payload: Readonly<Record<string, unknown>>): Promise<void> {
    await this.life.setCustomPayload(payload);
  }

  emit(event: VerbEvent): void {
    void this.life.emit(event.code, { ...event.data });
  }

  async #storeRecording(r: RecordingResult) {
    const seconds = Math.round(r.durationSec);
    // The account's own retention when the operator set one (`simu account retention`), else the platform's.
    const days = await recordingRetentionDaysFor(this.#d.db, this.row.account_id, this.#d.recordingRetentionDays);
    const expires = new Date(Date.now() + days * 86400_000).toISOString();
    const rec = await insertRecording(this.#d.db, {
      account_id: this.row.account_id,
      call_id: this.id,
      call_sid: this.row.sid,
      duration_seconds: seconds,
      size_bytes: r.sizeBytes,
      storage_path: r.path,
      expires_at: expires,
    });
    await this.life.emit(EventCodes.recordingCompleted, { recordingUuid: rec.id, duration: seconds });
    return rec;
  }
}
