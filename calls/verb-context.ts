import type { Logger } from '../config/index.js';
import { EventCodes } from '../events/index.js';
import { MediaError, type RecordingResult, type TtsSubstitution } from '../media/index.js';
import {
  getAccountSettings,
  findPlayableAsset,
  type AccountSettings,
  type AssetAudioSource,
  type Db,
} from '../store/index.js';
import {
  callControlFetcher,
  type ActionCallbackExtras,
  type CallControlEndUser,
  type DialOptions,
  type DialResult,
  type DialTarget,
  type FallbackPolicy,
  type GatherOptions,
  type GatherResult,
  type HangupCause,
  type PlayResult,
  type PlaySource,
  type RecordOptions,
  type RecordResult,
  type SayOptions,
  type SessionRecordingOptions,
  type VerbContext,
  type VerbDocument,
  type VerbEvent,
  type QueueTicket,
  type StreamNoun,
} from '../verbs/index.js';
import { sleep, type Clock, type ReplyHeaders, type UrlPolicy } from '../kit/index.js';
import type { CallBilling } from './call-billing.js';
import type { LastGoodCall, LastGoodDocuments } from './prepaid/last-good.js';
import type { CallMedia } from './call-media.js';
import { CallDigits, type DigitSource } from './call-digits.js';
import { runGather } from './gather-run.js';
import type { CallLifecycle } from './lifecycle.js';
import type { SpeechInput } from './speech-input.js';
import { CallLiveVerbs } from './live-verbs.js';
import type { QueueRegistry } from './queue/queue-registry.js';

export interface CallVerbsDeps {
  db: Db;
  media: CallMedia;
  log: Logger;
  clock: Clock;
  billing?: CallBilling;
  webhookTimeoutMs: number;
  /** Where the account's webhook URLs may point (kit/url-policy.ts); default: public destinations only. */
  urlPolicy?: UrlPolicy;
  /** Where assets not kept locally are fetched from (s3); local assets need nothing. */
  assetStorage?: AssetAudioSource;
  /** Stores a Record verb's file and announces it (calls/call-recording.ts); resolves with its Recording. */
  keepRecording(r: RecordingResult): Promise<{ id: string }>;
  /** The speech recogniser for Gather input="speech"; absent: such a Gather hears nothing. */
  speech?: SpeechInput;
  /** This process's call queues (Enqueue, Dial Queue); absent: those verbs end with QueueResult error. */
  queues?: QueueRegistry;
  /** The last known good call-control documents (calls/prepaid/last-good.ts); absent: never used. */
  lastGood?: LastGoodDocuments;
}

/** Most voice substitutions one call reports (each distinct voice or language asked for is one). */
const MAX_SUBSTITUTION_REPORTS = 16;

/** What the verbs need of the call they run on, beyond its media (LiveCall is it). */
export interface VerbHost {
  readonly life: CallLifecycle;
  /** Answers the caller first if it still rings: the first verb that needs the line does (billing starts). */
  needMedia(): Promise<void>;
  /** Ends the call as the interpreter asks (refused while ringing, else BYE); does not wait for the end. */
  hangup(cause?: HangupCause): void;
  /** Places and bridges the Dial's leg (calls/flows/dial-verb.ts); absent in set-ups without SIP. */
  dial?(target: DialTarget, options: DialOptions): Promise<DialResult>;
  /** The end-user who placed the call (call-control requests carry it), if one did. */
  endUser(): CallControlEndUser | null;
  /** The caller's INVITE still rings and no answer is under way: a Reject can refuse it. */
  canReject(): boolean;
  /** Refuses the ringing call (486 busy / 603 rejected) and ends it unanswered; does not wait for the end. */
  reject(reason: 'busy' | 'rejected'): void;
}

/**
 * The VerbContext the interpreter runs a call's verbs through: Say, Play, Record and RecordSession on the call's
 * media, Dial through the call, next documents fetched signed with the account's current secret, events and TTS
 * seconds on the call's record. Every verb that needs the line answers a ringing caller first.
 */
export class CallVerbs implements VerbContext {
  readonly #d: CallVerbsDeps;
  readonly #host: VerbHost;
  readonly #digits: CallDigits;
  #fallback: FallbackPolicy = { mode: 'drop', value: '' };
  /** The number's call-control URL until its first request (the only one a last good document may answer). */
  #controlUrl: string | undefined;
  /** Queues and media streams (calls/live-verbs.ts). */
  readonly #live: CallLiveVerbs;
  /** Say voices and languages already reported as spoken with the default (`attribute=value`). */
  readonly #substituted = new Set<string>();

  constructor(deps: CallVerbsDeps, host: VerbHost) {
    this.#d = deps;
    this.#host = host;
    this.#digits = new CallDigits(deps.clock);
    this.#live = new CallLiveVerbs({
      db: deps.db,
      media: deps.media,
      log: deps.log,
      life: host.life,
      urlPolicy: deps.urlPolicy,
      queues: deps.queues,
      listenKeys: (fn) => this.#digits.listen(({ digit }) => fn(digit)),
    });
  }

  get fallback(): FallbackPolicy {
    return this.#fallback;
  }

  /** The account's fallback policy, read when the verbs start. */
  useFallback(policy: FallbackPolicy): void {
    this.#fallback = policy;
  }

  get #life(): CallLifecycle {
    return this.#host.life;
  }

  async say(text: string, options: SayOptions): Promise<void> {
    await this.#host.needMedia();
    const r = await this.#d.media.say(options.ssml ?? text, {
      voice: options.voice,
      language: options.language,
      signal: options.signal,
      ...(options.ssml === undefined ? {} : { ssml: true }),
    });
    for (const s of r.substituted ?? []) this.#reportSubstituted(s);
    await this.#life.addTtsSeconds(r.ttsSeconds);
    this.#d.billing?.ttsUsed(this.#life.row.id, r.ttsSeconds, r.tier);
    await this.#life.emit(EventCodes.ttsGenerated, { seconds: r.ttsSeconds, tier: r.tier });
  }

  /**
   * A Say's voice or language the platform does not have was spoken with the default: VERB.0299, as for an
   * attribute Simu does not know, once per call for each value.
   */
  #reportSubstituted(s: TtsSubstitution): void {
    const key = `${s.attribute}=${s.value}`;
    if (this.#substituted.has(key) || this.#substituted.size >= MAX_SUBSTITUTION_REPORTS) return;
    this.#substituted.add(key);
    void this.#life.emit(EventCodes.verbAttributeIgnored, { element: 'Say', attribute: s.attribute, value: s.value });
  }

  async play(source: PlaySource, options: { readonly signal: AbortSignal }): Promise<PlayResult> {
    await this.#host.needMedia();
    const row = this.#life.row;
    if (source.kind === 'asset') {
      // Absent, inactive or without audio: PLAY.0404 and the next verb (spec, Play).
      const file = await findPlayableAsset(this.#d.db, row.account_id, source.name, this.#d.assetStorage);
      if (!file) return 'asset_missing';
      await this.#d.media.playFile(file, { signal: options.signal });
      return 'played';
    }
    try {
      await this.#d.media.playUrl(source.url, { signal: options.signal });
      return 'played';
    } catch (e) {
      if (e instanceof MediaError) {
        this.#d.log.info({ call: row.sid, url: source.url, code: e.code }, 'audio not playable; next verb');
        return 'asset_missing';
      }
      throw e;
    }
  }

  async dial(target: DialTarget, options: DialOptions): Promise<DialResult> {
    await this.#host.needMedia();
    if (target.kind === 'queue') return this.#live.dialQueue(target.queue, options);
    if (!this.#host.dial) return { status: 'failed', durationSeconds: 0 };
    return this.#host.dial(target, options);
  }

  /** A key the caller pressed, from any source; the same press arriving two ways counts once (CallDigits). */
  digitPressed(digit: string, source: DigitSource = 'rfc4733-log', durationMs = 0): void {
    this.#digits.press(digit, source, durationMs);
  }

  /** Gather: prompts and keys (and speech, with a recogniser) on the answered line (calls/gather-run.ts). */
  async gather(options: GatherOptions): Promise<GatherResult> {
    await this.#host.needMedia();
    return runGather(
      {
        clock: this.#d.clock,
        listen: (fn) => this.#digits.listen(fn),
        speech: this.#d.speech,
        callId: this.#life.row.id,
      },
      options,
    );
  }

  /** <Enqueue> (calls/queue/): joins the account's queue on this process; answers the line first. */
  async joinQueue(name: string, options: { readonly maxSize: number }): Promise<QueueTicket> {
    await this.#host.needMedia();
    return this.#live.joinQueue(name, options.maxSize);
  }

  playHold(options: { readonly signal: AbortSignal }): Promise<void> {
    return this.#live.playHold(options.signal);
  }

  /** Media streams (calls/streams/call-streams.ts): <Start>, <Stop>, <Connect> <Stream>. */
  async startStream(stream: StreamNoun): Promise<void> {
    await this.#host.needMedia();
    await this.#live.startStream(stream);
  }

  stopStream(name: string | undefined): Promise<void> {
    return this.#live.stopStream(name);
  }

  async connectStream(stream: StreamNoun, options: { readonly signal: AbortSignal }): Promise<'closed' | 'failed'> {
    await this.#host.needMedia();
    return this.#live.connectStream(stream, options.signal);
  }

  /** The call ended: its streams send `stop` and close. */
  closeStreams(): Promise<void> {
    return this.#live.closeStreams();
  }

  canReject(): boolean {
    return this.#host.canReject();
  }

  async reject(reason: 'busy' | 'rejected'): Promise<void> {
    this.#host.reject(reason);
  }

  /**
   * Record: a beep first (playBeep), then the caller's audio until silence, maxLength, a key of finishOnKey
   * (the recording is kept), or the verb being killed.
   */
  async record(options: RecordOptions): Promise<RecordResult> {
    await this.#host.needMedia();
    if (options.playBeep) await this.#d.media.playBeep({ signal: options.signal });
    if (options.signal.aborted) return { durationSeconds: 0 };
    await this.#life.emit(EventCodes.recordingStarted, {});
    const finished = new AbortController();
    const unlisten = this.#digits.listen(({ digit }) => {
      if (options.finishOnKey.includes(digit)) finished.abort();
    });
    let r: RecordingResult;
    try {
      r = await this.#d.media.record({
        maxLengthSec: options.maxLength,
        silenceTimeoutSec: options.timeout,
        signal: AbortSignal.any([options.signal, finished.signal]),
      });
    } finally {
      unlisten();
    }
    const rec = await this.#d.keepRecording(r);
    // RecordingPath is the Recording's uuid (what POST /api/recordings/download takes), never the file's place on
    // this server: an absolute path told every customer the data directory's layout.
    return { durationSeconds: Math.round(r.durationSec), path: rec.id };
  }

  /**
   * RecordSession (and Dial's `record`): from now until the call ends, the caller on one channel and what it
   * hears on the other (our prompts, and any leg a Dial bridges it to). Stored and announced (REC.0300) when the
   * call ends. A second one while recording changes nothing. If it cannot start, the call goes on unrecorded.
   */
  async startSessionRecording(options: SessionRecordingOptions): Promise<void> {
    await this.#host.needMedia();
    if (this.#d.media.isRecording()) return;
    try {
      await this.#d.media.startRecording({ maxLengthSec: options.maxLength, mono: options.channels === 'mono' });
    } catch (e) {
      if (!(e instanceof MediaError)) throw e;
      this.#d.log.warn(
        { err: e, call: this.#life.row.sid },
        'RecordSession could not start; the call goes on unrecorded',
      );
      return;
    }
    await this.#life.emit(EventCodes.recordingStarted, {});
  }

  async pause(seconds: number, options: { readonly signal: AbortSignal }): Promise<void> {
    await this.#host.needMedia(); // a Pause first answers: silence on an answered line, as the caller expects
    await sleep(this.#d.clock, seconds * 1000, options.signal);
  }

  async hangup(cause?: HangupCause): Promise<void> {
    this.#host.hangup(cause);
  }

  /** The verbs start from the number's call-control URL (LiveCall.runVerbs). */
  expectCallControl(url: string): void {
    this.#controlUrl = url;
  }

  async fetchDocument(
    url: string,
    extras: ActionCallbackExtras,
    options: { readonly signal: AbortSignal },
  ): Promise<VerbDocument> {
    // The secret is read per request (from the store's read cache, which every write to accounts invalidates): a
    // rotation takes effect for every later request (spec, Authentication 6).
    const account = await getAccountSettings(this.#d.db, this.#life.row.account_id);
    const lastGood = this.#lastGoodCall(url, account);
    if (lastGood && this.#d.lastGood)
      return this.#d.lastGood.fetch(
        lastGood,
        url,
        (onSource) => this.#fetchWith(account, url, extras, options, onSource),
        (code, data) => this.#life.emit(code, data),
      );
    return this.#fetchWith(account, url, extras, options);
  }

  /** The first request of an inbound call to its number, when the account opted in to the last good document. */
  #lastGoodCall(url: string, account: AccountSettings): LastGoodCall | undefined {
    if (url !== this.#controlUrl) return undefined;
    this.#controlUrl = undefined;
    const row = this.#life.row;
    if (!account.last_good_document || row.direction !== 'inbound') return undefined;
    return { id: row.id, sid: row.sid, accountId: row.account_id, number: row.to_number, from: row.from_number };
  }

  #fetchWith(
    account: AccountSettings,
    url: string,
    extras: ActionCallbackExtras,
    options: { readonly signal: AbortSignal },
    onSource?: (xml: string, headers: ReplyHeaders) => void,
  ): Promise<VerbDocument> {
    const fetcher = callControlFetcher({
      call: () => {
        const row = this.#life.row;
        return {
          sid: row.sid,
          accountUuid: row.account_id,
          direction: row.direction === 'inbound' ? 'inbound' : 'outbound',
          from: row.from_number,
          to: row.to_number,
          customPayload: row.custom_payload ? JSON.parse(row.custom_payload) : null,
          endUser: this.#host.endUser(),
          answeredBy: row.answered_by ?? null,
          machineDetectionDurationMs: row.machine_detection_ms ?? null,
        };
      },
      secret: account.signing_secret,
      timeoutMs: this.#d.webhookTimeoutMs,
      ...(this.#d.urlPolicy === undefined ? {} : { urlPolicy: this.#d.urlPolicy }),
      ...(onSource === undefined ? {} : { onSource }),
    });
    return fetcher(url, extras, options);
  }

  async setCustomPayload(payload: Readonly<Record<string, unknown>>): Promise<void> {
    await this.#life.setCustomPayload(payload);
  }

  emit(event: VerbEvent): void {
    void this.#life.emit(event.code, { ...event.data });
  }
}
