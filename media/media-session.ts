import type { Logger } from '../config/index.js';
import { MediaError } from './errors.js';
import { checkDigits, sendDigits } from './digit-sender.js';
import { IvrEndpoint, type RecordingResult } from './ivr-endpoint.js';
import { profileFlags, type LegMediaOptions } from './leg-profiles.js';
import type { Limiter } from './limiter.js';
import type { NgClient, NgParams } from './ng-client.js';
import { Playback, type PlaybackOptions, type PlaybackResult } from './playback.js';
import { keepCodecs, plainAudioSdp, type AudioCodec } from './sdp.js';
import { SessionRecorder, type RecordingTarget } from './session-recorder.js';
import { TypedEmitter, type Clock } from '../kit/index.js';
import { LegAudioPort } from './streams/audio-port.js';

/** The ng commands a session sends (a fake of these is enough to unit-test a session). */
export type SessionNgClient = Pick<
  NgClient,
  | 'offer'
  | 'answer'
  | 'delete'
  | 'query'
  | 'playMedia'
  | 'stopMedia'
  | 'startRecording'
  | 'stopRecording'
  | 'playDtmf'
  | 'subscribeRequest'
  | 'subscribeAnswer'
  | 'unsubscribe'
>;

/** The rtpengine that anchored the call; the session stays on it for its whole life. */
export interface SessionEngine {
  readonly address: string;
  readonly client: SessionNgClient;
}

export interface MediaSessionOptions {
  callId: string;
  engine: SessionEngine;
  clock: Clock;
  log: Logger;
  /** Address our IVR endpoints bind to; must be reachable by the engine. */
  localMediaAddress: string;
  /** rtpengine's --recording-dir (RecordSession reads its pcaps there); undefined: RecordSession is refused. */
  engineRecordingDir?: string;
  /** A fresh file path for a recording of this call (`kind`: a leg tag, or 'session'). */
  recordingPath: (kind: string) => string;
  /** Shared by every session: how many `play media` starts may be in flight at once. */
  playStarts: Limiter;
}

export interface LegRecordOptions {
  maxLengthSec?: number;
  silenceTimeoutSec?: number;
  signal?: AbortSignal;
}

/** Why a session closed: hung up (its media is deleted in the engine), or its engine died (nothing to delete). */
export type MediaSessionCloseReason = 'deleted' | 'engine-lost';

/** 'close': the session has closed (emitted once, when close starts; its children are already closed). */
export type MediaSessionEvents = {
  close: [reason: MediaSessionCloseReason];
  /** A key an IVR leg pressed, read by our endpoint: an RFC 4733 event as it starts, or tones (#listenForKeys). */
  key: [legTag: string, digit: string, source: 'rtp-event' | 'inband'];
};

/**
 * The media of one call, pinned to the rtpengine that anchored it; legs are named by tags. Like a mediasoup
 * transport it owns its children in Maps: an IvrEndpoint per leg the platform answers or places, the Playback
 * playing to each leg, and the RecordSession recorder. `close()` cascades to all of them, rejects every request
 * still waiting on the engine with MEDIA_NO_SESSION, deletes the call in the engine, and is safe to call twice.
 */
export class MediaSession extends TypedEmitter<MediaSessionEvents> {
  readonly callId: string;
  readonly engine: SessionEngine;
  readonly #o: MediaSessionOptions;
  readonly #ivr = new Map<string, IvrEndpoint>();
  readonly #playbacks = new Map<string, Playback>();
  /** The audio port of each IVR endpoint that was asked for one (audioPort). */
  readonly #ports = new WeakMap<IvrEndpoint, LegAudioPort>();
  /** Per leg the platform answers or places: the SDP that leg sent and its side's profile (for Dial and back). */
  readonly #callerSdp = new Map<string, { sdp: string; side?: LegMediaOptions }>();
  /** The profile asked for a leg the platform calls (offerIvr), until its answer arrives (completeIvr). */
  readonly #calleeSide = new Map<string, LegMediaOptions | undefined>();
  readonly #pending = new Set<(err: MediaError) => void>();
  /** IVR legs re-anchored with rtpengine's `inject DTMF` (the first digits sent into them do it). */
  readonly #injecting = new Set<string>();
  /** Copies of legs' audio to endpoints of ours (forkAudio), each stopped by its function. */
  readonly #forks = new Set<IvrEndpoint>();
  #recorder: SessionRecorder | undefined;
  #closed = false;
  #closing: Promise<{ sessionRecording?: RecordingResult }> | undefined;

  constructor(opts: MediaSessionOptions) {
    super(opts.log);
    this.callId = opts.callId;
    this.engine = opts.engine;
    this.#o = opts;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get isRecording(): boolean {
    return this.#recorder !== undefined;
  }

  /** The media profile a leg the platform answered or placed was set up with (undefined: plain RTP). */
  legSide(legTag: string): LegMediaOptions | undefined {
    return this.#callerSdp.get(legTag)?.side;
  }

  /** RTP packets our IVR endpoint of a leg has received (benches, diagnostics). */
  ivrPacketsReceived(legTag: string): number {
    return this.#ivr.get(legTag)?.packetsReceived ?? 0;
  }

  /** Offer from leg `fromTag`; returns the SDP for the other side, shaped by `toSide` (see MediaService.offer). */
  async offer(
    fromTag: string,
    sdp: string,
    opts: { toSide?: LegMediaOptions; offererCodecs?: AudioCodec[]; toTag?: string; flags?: string[] } = {},
  ): Promise<string> {
    const r = await this.#request((c) =>
      c.offer({
        'call-id': this.callId,
        'from-tag': fromTag,
        // A re-offer inside an established bridge (re-INVITE, either direction) names the other leg.
        ...(opts.toTag === undefined ? {} : { 'to-tag': opts.toTag }),
        sdp: opts.offererCodecs ? keepCodecs(sdp, [...opts.offererCodecs, 'telephone-event']) : sdp,
        ...withFlags(profileFlags(opts.toSide, true), opts.flags),
        replace: ['origin', 'session-connection'],
      }),
    );
    return r.sdp;
  }

  /** Answer from leg `toTag` to the offer of `fromTag`; returns the SDP for the offerer, shaped by `fromSide`. */
  async answer(
    fromTag: string,
    toTag: string,
    sdp: string,
    opts: { fromSide?: LegMediaOptions; flags?: string[] } = {},
  ) {
    const r = await this.#request((c) =>
      c.answer({
        'call-id': this.callId,
        'from-tag': fromTag,
        'to-tag': toTag,
        sdp,
        ...withFlags(profileFlags(opts.fromSide ?? this.#callerSdp.get(fromTag)?.side, false), opts.flags),
        replace: ['origin', 'session-connection'],
      }),
    );
    return r.sdp;
  }

  /** Answer leg `legTag` with the platform itself (IVR); returns the SDP to answer the caller with. */
  async answerIvr(legTag: string, callerSdp: string, opts: { callerSide?: LegMediaOptions } = {}): Promise<string> {
    const caller = { sdp: callerSdp, side: opts.callerSide };
    this.#callerSdp.set(legTag, caller);
    return this.#anchorToIvr(legTag, caller);
  }

  /** Dial from an IVR-answered caller: move `legTag` from our IvrEndpoint to a new leg `toTag` (see MediaService). */
  async offerFromIvr(legTag: string, toTag: string, opts: { toSide?: LegMediaOptions } = {}): Promise<string> {
    const caller = this.#ivrCaller(legTag);
    this.stopPlayback(legTag);
    const sdp = await this.offer(legTag, caller.sdp, { toSide: opts.toSide, toTag });
    this.#ivr.get(legTag)?.close();
    this.#ivr.delete(legTag);
    return sdp;
  }

  /** The bridge of a Dial is over: move `legTag` back to a fresh IvrEndpoint (see MediaService.returnToIvr). */
  async returnToIvr(legTag: string): Promise<void> {
    await this.#anchorToIvr(legTag, this.#ivrCaller(legTag), ivrTag(legTag));
  }

  /** The platform calls out (IVR as offerer): the SDP to put in the INVITE to `legTag`. */
  async offerIvr(legTag: string, opts: { calleeSide?: LegMediaOptions } = {}): Promise<string> {
    const endpoint = await this.#openIvr(legTag);
    this.#calleeSide.set(legTag, opts.calleeSide);
    return this.offer(ivrTag(legTag), endpoint.sdp(), { toSide: opts.calleeSide });
  }

  /** The callee's answer to `offerIvr`. */
  async completeIvr(legTag: string, calleeSdp: string): Promise<void> {
    // Kept like an inbound caller's offer: a Dial on this call re-offers it towards the dialled leg.
    this.#callerSdp.set(legTag, { sdp: calleeSdp, side: this.#calleeSide.get(legTag) });
    this.#listenForKeys(legTag, this.#ivr.get(legTag), calleeSdp);
    const toIvr = await this.answer(ivrTag(legTag), legTag, calleeSdp, { fromSide: { profile: 'rtp' } });
    this.#ivr.get(legTag)?.engineAnswered(toIvr);
  }

  /** Play a WAV to leg `legTag`; resolves when played, or cut short ({completed: false}). */
  async play(legTag: string, path: string, opts: PlaybackOptions = {}): Promise<PlaybackResult> {
    this.#assertOpen();
    this.stopPlayback(legTag);
    if (opts.signal?.aborted) return { durationMs: 0, completed: false };
    // `play media` plays towards the party named by from-tag (verified with rtpengine 10.5) and answers with
    // the file's duration in ms; 10.5 sends no end-of-playback notice, so the duration is our clock.
    const r = await this.#request((c) =>
      this.#o.playStarts.run(() => {
        this.#assertOpen(); // closed while queued behind other starts: never sent
        return c.playMedia({ 'call-id': this.callId, 'from-tag': legTag, file: path });
      }),
    );
    const durationMs = typeof r.duration === 'number' ? r.duration : 0;
    if (this.closed) return { durationMs, completed: false };
    opts.onStarted?.(durationMs);
    // A recorded call: rtpengine's pcap does not hold injected audio, so what the caller heard is noted here.
    const prompt = this.#recorder?.notePrompt(legTag, path, this.#o.clock.now());
    const playback: Playback = new Playback({
      durationMs,
      clock: this.#o.clock,
      signal: opts.signal,
      onFinish: (completed) => {
        if (prompt && !completed) prompt.stoppedAtMs = this.#o.clock.now();
        if (this.#playbacks.get(legTag) === playback) this.#playbacks.delete(legTag);
        if (!completed && !this.closed) {
          this.engine.client.stopMedia({ 'call-id': this.callId, 'from-tag': legTag }).catch(() => undefined);
        }
      },
    });
    this.#playbacks.set(legTag, playback);
    return playback.done;
  }

  /** Stop what is playing to `legTag` (barge-in, a new verb). */
  stopPlayback(legTag: string): void {
    this.#playbacks.get(legTag)?.finish(false);
  }

  /**
   * Sends `digits` (0-9 * # A-D, w a half-second pause) into the call towards leg `legTag` as RFC 4733 events
   * (media/digit-sender.ts). The first time, the leg is re-anchored in rtpengine with `inject DTMF` (no re-INVITE:
   * its ports stay, as in returnToIvr). MEDIA_LEG_BRIDGED while a Dial bridges the leg to another.
   */
  async sendDigits(legTag: string, digits: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    checkDigits(digits);
    this.#assertOpen();
    const endpoint = this.#ivr.get(legTag);
    if (!endpoint) throw new MediaError('MEDIA_LEG_BRIDGED', `leg ${legTag} is not answered by the platform now`);
    if (!this.#injecting.has(legTag)) {
      await this.#anchorToIvr(legTag, this.#ivrCaller(legTag), ivrTag(legTag), ['inject DTMF']);
      this.#injecting.add(legTag);
    }
    await sendDigits(
      {
        clock: this.#o.clock,
        send: (packet) => !this.closed && endpoint.send(packet),
        playKey: async (key, durationMs) => {
          await this.#request((c) =>
            c.playDtmf({ 'call-id': this.callId, 'from-tag': ivrTag(legTag), code: key, duration: durationMs }),
          );
        },
      },
      digits,
      opts.signal,
    );
  }

  /** The caller's audio of IVR leg `legTag` as it arrives (speech recognition); MEDIA_LEG_BRIDGED when not one. */
  tapAudio(legTag: string, onAudio: (samples: Int16Array) => void): () => void {
    this.#assertOpen();
    const endpoint = this.#ivr.get(legTag);
    if (!endpoint) throw new MediaError('MEDIA_LEG_BRIDGED', `leg ${legTag} is not answered by the platform now`);
    return endpoint.tapAudio(onAudio);
  }

  /**
   * What leg `legTag` sends, whatever it is bridged to (a Dial's dialled leg): rtpengine forks a copy of its media
   * to an endpoint of ours (`subscribe request`, transcoded to PCMU) while the call's own media flows untouched.
   * Resolves once the copy is set up; the returned function unsubscribes (safe twice; close ends it too).
   */
  async forkAudio(legTag: string, onAudio: (samples: Int16Array) => void): Promise<() => void> {
    this.#assertOpen();
    const endpoint = new IvrEndpoint({ address: this.#o.localMediaAddress, clock: this.#o.clock });
    await endpoint.open();
    this.#forks.add(endpoint);
    let subscription: string | undefined;
    const stop = (): void => {
      if (!this.#forks.delete(endpoint)) return;
      endpoint.close();
      if (subscription === undefined || this.closed) return;
      this.engine.client.unsubscribe({ 'call-id': this.callId, 'to-tag': subscription }).catch(() => undefined);
    };
    try {
      const offer = await this.#request((c) =>
        c.subscribeRequest({ 'call-id': this.callId, 'from-tag': legTag, codec: { transcode: ['PCMU'] } }),
      );
      subscription = String(offer['to-tag']);
      const answer = plainAudioSdp({
        address: this.#o.localMediaAddress,
        port: endpoint.port,
        codecs: ['PCMU'],
        direction: 'recvonly',
      });
      await this.#request((c) =>
        c.subscribeAnswer({
          'call-id': this.callId,
          'to-tag': subscription!,
          sdp: answer,
          flags: ['allow transcoding'],
        }),
      );
    } catch (err) {
      stop();
      throw err;
    }
    endpoint.tapAudio(onAudio);
    return stop;
  }

  /**
   * The caller's audio of IVR leg `legTag` both ways as PCMU frames (media/streams/audio-port.ts: queue bridges,
   * media streams); MEDIA_LEG_BRIDGED when the leg is not answered by the platform now. One port per leg.
   */
  audioPort(legTag: string): LegAudioPort {
    this.#assertOpen();
    const endpoint = this.#ivr.get(legTag);
    if (!endpoint) throw new MediaError('MEDIA_LEG_BRIDGED', `leg ${legTag} is not answered by the platform now`);
    let port = this.#ports.get(endpoint);
    if (!port) {
      port = new LegAudioPort(endpoint);
      this.#ports.set(endpoint, port);
    }
    return port;
  }

  /** Record what an IVR leg says (Record verb): ends on silence, at max length, by the signal, or at close. */
  record(legTag: string, opts: LegRecordOptions = {}): Promise<RecordingResult> {
    const endpoint = this.#ivr.get(legTag);
    if (!endpoint) {
      return Promise.reject(new MediaError('MEDIA_RECORDING_FAILED', `leg ${legTag} is not answered by the platform`));
    }
    return endpoint.record({
      path: this.#o.recordingPath(legTag),
      maxLengthMs: (opts.maxLengthSec ?? 3600) * 1000,
      silenceTimeoutMs: (opts.silenceTimeoutSec ?? 5) * 1000,
      signal: opts.signal,
    });
  }

  /**
   * RecordSession, the one start path for both kinds (a bridge, or a caller and what it hears). The first start
   * wins: a second one, even while the first is still being set up in the engine, changes nothing.
   */
  async startRecording(target: RecordingTarget): Promise<void> {
    this.#assertOpen();
    if (!this.#o.engineRecordingDir) {
      throw new MediaError('MEDIA_RECORDING_FAILED', 'RecordSession needs the local engine (its pcaps are read here)');
    }
    if (this.#recorder) return;
    const recorder = new SessionRecorder(target, this.#o.recordingPath('session'));
    this.#recorder = recorder;
    try {
      recorder.locate(await this.#request((c) => c.query({ 'call-id': this.callId })));
      await this.#request((c) => c.startRecording({ 'call-id': this.callId }));
      recorder.begin(this.#o.clock.now());
    } catch (err) {
      if (this.#recorder === recorder) this.#recorder = undefined;
      throw err;
    }
  }

  /** Stop RecordSession and write its WAV (close does this too, for a recording still running). */
  async stopRecording(): Promise<RecordingResult> {
    const recorder = this.#recorder;
    const dir = this.#o.engineRecordingDir;
    if (!recorder?.started || !dir) throw new MediaError('MEDIA_RECORDING_FAILED', 'no session recording');
    this.#recorder = undefined;
    await this.engine.client.stopRecording({ 'call-id': this.callId }).catch(() => undefined);
    return recorder.write(dir, this.callId);
  }

  /**
   * The one teardown. At once: rejects requests still waiting on the engine, finishes playbacks (not completed),
   * closes IVR endpoints (a Record in progress keeps what it has), and emits 'close'. Then, unless the engine is
   * gone: stops RecordSession, `delete`s the call in the engine so its ports are freed, and writes the recording.
   * Safe to call twice: every call returns the first one's result.
   */
  close(reason: MediaSessionCloseReason = 'deleted'): Promise<{ sessionRecording?: RecordingResult }> {
    this.#closing ??= this.#teardown(reason);
    return this.#closing;
  }

  async #teardown(reason: MediaSessionCloseReason): Promise<{ sessionRecording?: RecordingResult }> {
    this.#closed = true;
    if (this.#pending.size > 0) {
      const closedError = this.#closedError(); // made only when someone waits: an Error's stack is not free
      for (const reject of [...this.#pending]) reject(closedError);
      this.#pending.clear();
    }
    for (const p of [...this.#playbacks.values()]) p.finish(false);
    for (const e of this.#ivr.values()) e.close();
    this.#ivr.clear();
    for (const e of this.#forks) e.close();
    this.#forks.clear();
    const recorder = this.#recorder?.started ? this.#recorder : undefined;
    this.#recorder = undefined;
    this.safeEmit('close', reason);
    if (reason === 'engine-lost') return {};
    const client = this.engine.client;
    if (recorder) await client.stopRecording({ 'call-id': this.callId }).catch(() => undefined);
    await client.delete({ 'call-id': this.callId }).catch((err: MediaError) => {
      // "Call-ID not found" just means the engine never held it (or restarted); nothing leaks there.
      this.#o.log.debug({ callId: this.callId, err: err.message }, 'rtpengine delete failed');
    });
    if (!recorder || !this.#o.engineRecordingDir) return {};
    try {
      return { sessionRecording: await recorder.write(this.#o.engineRecordingDir, this.callId) };
    } catch (err) {
      this.#o.log.warn({ callId: this.callId, err: (err as Error).message }, 'session recording lost');
      return {};
    }
  }

  /**
   * Points leg `legTag` (which sent `caller.sdp`) at its IvrEndpoint inside rtpengine: an offer towards the
   * endpoint (G.711, transcoded as needed; `toTag` when the leg is re-pointed inside an existing call) and the
   * endpoint's answer. Returns the SDP for the leg, shaped by its own profile.
   */
  async #anchorToIvr(
    legTag: string,
    caller: { sdp: string; side?: LegMediaOptions },
    toTag?: string,
    flags: string[] = this.#injecting.has(legTag) ? ['inject DTMF'] : [],
  ) {
    const endpoint = await this.#openIvr(legTag);
    this.#listenForKeys(legTag, endpoint, caller.sdp);
    const toIvr = await this.offer(legTag, caller.sdp, { toSide: { profile: 'rtp', codecs: ['PCMU'] }, toTag, flags });
    return this.answer(legTag, ivrTag(legTag), endpoint.sdp(toIvr), { fromSide: caller.side, flags });
  }

  async #openIvr(legTag: string): Promise<IvrEndpoint> {
    this.#assertOpen();
    const existing = this.#ivr.get(legTag);
    if (existing) return existing;
    const endpoint = new IvrEndpoint({ address: this.#o.localMediaAddress, clock: this.#o.clock });
    await endpoint.open();
    if (this.closed) {
      endpoint.close(); // closed while the socket was being bound: nothing may outlive the session
      throw this.#closedError();
    }
    const raced = this.#ivr.get(legTag);
    if (raced) {
      endpoint.close();
      return raced;
    }
    this.#ivr.set(legTag, endpoint);
    return endpoint;
  }

  /** Keys our endpoint reads; a leg whose SDP has no telephone-event sends them as sound (tone detection). */
  #listenForKeys(legTag: string, endpoint: IvrEndpoint | undefined, legSdp: string): void {
    const tones = !/telephone-event\//i.test(legSdp);
    endpoint?.onKeys((digit, source) => this.safeEmit('key', legTag, digit, source), { tones });
  }

  #ivrCaller(legTag: string): { sdp: string; side?: LegMediaOptions } {
    const caller = this.#callerSdp.get(legTag);
    if (!caller) throw new MediaError('MEDIA_NO_SESSION', `leg ${legTag} of ${this.callId} is not an IVR leg`);
    return caller;
  }

  /** An ng request of this session: refused once closed, and rejected if the session closes before the answer. */
  #request<T>(send: (client: SessionNgClient) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(this.#closedError());
    return new Promise<T>((resolve, reject) => {
      const onClose = (err: MediaError): void => reject(err);
      this.#pending.add(onClose);
      let sent: Promise<T>;
      try {
        sent = send(this.engine.client);
      } catch (err) {
        sent = Promise.reject(err as Error);
      }
      sent.then(
        (v) => {
          this.#pending.delete(onClose);
          resolve(v);
        },
        (err: unknown) => {
          this.#pending.delete(onClose);
          reject(err);
        },
      );
    });
  }

  #assertOpen(): void {
    if (this.closed) throw this.#closedError();
  }

  #closedError(): MediaError {
    return new MediaError('MEDIA_NO_SESSION', `the media session of call ${this.callId} is closed`);
  }
}

/** ng `flags` of a profile plus `extra` (e.g. `inject DTMF`). */
function withFlags(params: NgParams, extra: string[] | undefined): NgParams {
  if (!extra?.length) return params;
  const own = Array.isArray(params.flags) ? (params.flags as string[]) : [];
  return { ...params, flags: [...own, ...extra] };
}

function ivrTag(legTag: string): string {
  return `${legTag}-ivr`;
}
