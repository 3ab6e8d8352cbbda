import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../config/index.js';
import { AudioFetcher } from './audio-fetch.js';
import { DtmfListener, type DtmfEvent } from './dtmf-listener.js';
import { MediaError } from './errors.js';
import { IvrEndpoint, type RecordingResult } from './ivr-endpoint.js';
import { profileFlags, type LegMediaOptions } from './leg-profiles.js';
import { keepCodecs, type AudioCodec } from './sdp.js';
import type { MediaEngine, MediaEngines } from './media-engines.js';
import { findCallPcaps, pcapToStereoWav, type RecordedPrompt } from './session-recording.js';
import { runTool } from './run-tool.js';
import { EspeakTtsEngine, type TtsEngine } from './tts.js';
import { TypedEmitter } from './typed-emitter.js';
import type { UrlPolicy } from '../kit/index.js';

/**
 * The media of calls, as the calls room and the verbs use it. One MediaSession per call id, pinned to the
 * rtpengine that anchored it; legs are named by tags (the SIP dialog's from/to tags, or any stable leg id).
 *
 * Bridging two SIP legs (B2BUA anchoring): `offer(callId, 'A', sdpFromA, {toSide})` gives the SDP to send to B;
 * `answer(callId, 'A', 'B', sdpFromB, {toSide})` gives the SDP to answer A with. Media flows through rtpengine.
 *
 * A leg the platform answers itself (IVR): `answerIvr(callId, 'A', sdpFromA)` returns the SDP to answer A with.
 * rtpengine anchors A and treats an IvrEndpoint (a UDP socket of ours) as the other party: prompts are
 * injected towards A with `play media` (files, TTS, fetched URLs); what A says arrives at our socket as PCMU,
 * where Record listens. For a call the platform places (API originate), `offerIvr` / `completeIvr` do the
 * same with the platform as offerer.
 */
export interface PlaybackOptions {
  signal?: AbortSignal;
  /** Called when rtpengine has started playing, with the length of the audio. */
  onStarted?: (durationMs: number) => void;
}

export interface PlaybackResult {
  durationMs: number;
  /** False when cancelled (signal, stopPlayback or hangup) before the end. */
  completed: boolean;
}

export interface SayOptions extends PlaybackOptions {
  voice?: string;
  language?: string;
  /** Times to play; 0 is treated as 1 here (callers bound "loop forever" themselves). */
  loop?: number;
}

export interface LegRecordOptions {
  maxLengthSec?: number;
  silenceTimeoutSec?: number;
  signal?: AbortSignal;
}

export interface MediaHealth {
  healthy: boolean;
  engines: Array<{ address: string; healthy: boolean }>;
  sessions: number;
}

export interface MediaServiceOptions {
  engines: MediaEngines;
  dataDir: string;
  logger: Logger;
  /** rtpengine's --recording-dir (RecordSession reads its pcaps there; local engines only). */
  engineRecordingDir?: string;
  /** Address our IVR endpoints bind to; must be reachable by the engine. */
  localMediaAddress?: string;
  tts?: TtsEngine;
  fetcher?: AudioFetcher;
  /** Where Play and fallback audio URLs may point, for the default fetcher (issue 22, SSRF). Default: public only. */
  urlPolicy?: UrlPolicy;
  /** Receive rtpengine's DTMF log on this port (the engine must have --dtmf-log-dest pointing here). */
  dtmfPort?: number;
}

interface Playback {
  timer: NodeJS.Timeout;
  finish: (completed: boolean) => void;
}

interface MediaSession {
  callId: string;
  engine: MediaEngine;
  ivr: Map<string, IvrEndpoint>;
  /**
   * Per leg the platform answers or places: the SDP that leg sent and the media profile of its side, for moving
   * it on to a bridge (Dial) and back.
   */
  callerSdp: Map<string, { sdp: string; side?: LegMediaOptions }>;
  /** The profile asked for a leg the platform calls (offerIvr), until its answer arrives (completeIvr). */
  calleeSide: Map<string, LegMediaOptions | undefined>;
  playbacks: Map<string, Playback>;
  /**
   * RecordSession: between two SIP legs (`ports` of [left, right]), or on a call the platform answered or placed
   * (`callerPort` left, everything else right, plus the prompts we played to the caller).
   */
  recording?: {
    ports?: [number, number];
    callerTag?: string;
    callerPort?: number;
    prompts: RecordedPrompt[];
    path: string;
    startedAtMs: number;
    maxLengthSec?: number;
    mono?: boolean;
  };
}

/**
 * 'dtmf': a digit from a leg. 'sessions-lost': the engine holding these calls died (their media is gone; the
 * calls room should end them). Their sessions are already dropped here.
 */
export type MediaServiceEvents = { dtmf: [DtmfEvent]; 'sessions-lost': [callIds: string[]] };

export class MediaService extends TypedEmitter<MediaServiceEvents> {
  readonly #engines: MediaEngines;
  readonly #sessions = new Map<string, MediaSession>();
  readonly #log: Logger;
  readonly #address: string;
  readonly #recordingsDir: string;
  readonly #engineRecordingDir: string | undefined;
  readonly #dtmf = new DtmfListener();
  readonly #dtmfPort: number | undefined;
  readonly tts: TtsEngine;
  readonly fetcher: AudioFetcher;
  #recordingSeq = 0;
  #beep: Promise<string> | undefined;
  /**
   * rtpengine 10.5 opens and probes the file before answering `play media`, on its control thread; a burst of
   * hundreds of starts kept it from answering anything (pings included) for seconds. At most a few starts are
   * in flight, so other commands interleave.
   */
  readonly #playStarts = new Limiter(4);

  constructor(opts: MediaServiceOptions) {
    super();
    this.#engines = opts.engines;
    this.#log = opts.logger;
    this.#address = opts.localMediaAddress ?? '127.0.0.1';
    this.#recordingsDir = join(opts.dataDir, 'recordings');
    mkdirSync(this.#recordingsDir, { recursive: true });
    this.#engineRecordingDir = opts.engineRecordingDir;
    this.tts = opts.tts ?? new EspeakTtsEngine({ cacheDir: join(opts.dataDir, 'tts-cache') });
    this.fetcher =
      opts.fetcher ??
      new AudioFetcher({
        cacheDir: join(opts.dataDir, 'audio-cache'),
        ...(opts.urlPolicy === undefined ? {} : { urlPolicy: opts.urlPolicy }),
      });
    this.#dtmfPort = opts.dtmfPort;
    this.#engines.on('engine-lost', (address) => this.#onEngineLost(address));
    this.#dtmf.on('dtmf', (e) => {
      if (this.#sessions.has(e.callId)) this.safeEmit('dtmf', e);
    });
  }

  async start(): Promise<void> {
    if (this.#dtmfPort !== undefined) await this.#dtmf.listen(this.#dtmfPort);
  }

  #session(callId: string, create = false): MediaSession {
    let s = this.#sessions.get(callId);
    if (!s && create) {
      s = {
        callId,
        engine: this.#engines.pick(),
        ivr: new Map(),
        callerSdp: new Map(),
        calleeSide: new Map(),
        playbacks: new Map(),
      };
      this.#sessions.set(callId, s);
    }
    if (!s) throw new MediaError('MEDIA_NO_SESSION', `no media session for call ${callId}`);
    return s;
  }

  /** The media profile a leg the platform answered or placed was set up with (undefined: plain RTP). */
  legSide(callId: string, legTag: string): LegMediaOptions | undefined {
    return this.#sessions.get(callId)?.callerSdp.get(legTag)?.side;
  }

  hasSession(callId: string): boolean {
    return this.#sessions.has(callId);
  }

  /**
   * Offer from leg `fromTag`; returns the SDP for the other side, shaped by `toSide`. `offererCodecs` limits
   * what the offerer may use (e.g. ['opus'] keeps a browser on Opus while the far end gets G.711).
   */
  async offer(
    callId: string,
    fromTag: string,
    sdp: string,
    opts: { toSide?: LegMediaOptions; offererCodecs?: AudioCodec[]; toTag?: string } = {},
  ): Promise<string> {
    const s = this.#session(callId, true);
    const r = await s.engine.client.offer({
      'call-id': callId,
      'from-tag': fromTag,
      // A re-offer inside an established bridge (re-INVITE, either direction) names the other leg.
      ...(opts.toTag === undefined ? {} : { 'to-tag': opts.toTag }),
      sdp: opts.offererCodecs ? keepCodecs(sdp, [...opts.offererCodecs, 'telephone-event']) : sdp,
      ...profileFlags(opts.toSide, true),
      replace: ['origin', 'session-connection'],
    });
    return r.sdp;
  }

  /**
   * Answer from leg `toTag` to the offer of `fromTag`; returns the SDP for the offerer, shaped by `fromSide`
   * (by default, for a leg the platform answered or placed, the profile that leg was set up with).
   */
  async answer(
    callId: string,
    fromTag: string,
    toTag: string,
    sdp: string,
    opts: { fromSide?: LegMediaOptions } = {},
  ): Promise<string> {
    const s = this.#session(callId);
    const r = await s.engine.client.answer({
      'call-id': callId,
      'from-tag': fromTag,
      'to-tag': toTag,
      sdp,
      ...profileFlags(opts.fromSide ?? s.callerSdp.get(fromTag)?.side, false),
      replace: ['origin', 'session-connection'],
    });
    return r.sdp;
  }

  /** Answer leg `legTag` with the platform itself (IVR); returns the SDP to answer the caller with. */
  async answerIvr(callId: string, legTag: string, callerSdp: string, opts: { callerSide?: LegMediaOptions } = {}) {
    const caller = { sdp: callerSdp, side: opts.callerSide };
    this.#session(callId, true).callerSdp.set(legTag, caller);
    return this.#anchorToIvr(callId, legTag, caller);
  }

  /**
   * Dial from an IVR-answered caller: move `legTag` from our IvrEndpoint to a new leg `toTag`. Returns the SDP
   * for the INVITE to `toTag`; finish with `answer(callId, legTag, toTag, sdpFromB)`. The caller is not
   * re-INVITEd: with rtpengine 10.5 the caller's original port keeps relaying to the new leg (tested), so the
   * SDP `answer` returns for the caller may be ignored.
   */
  async offerFromIvr(callId: string, legTag: string, toTag: string, opts: { toSide?: LegMediaOptions } = {}) {
    const s = this.#session(callId);
    const caller = s.callerSdp.get(legTag);
    if (!caller) throw new MediaError('MEDIA_NO_SESSION', `leg ${legTag} of ${callId} is not an IVR leg`);
    this.#finishPlayback(s, legTag, false);
    const sdp = await this.offer(callId, legTag, caller.sdp, { toSide: opts.toSide, toTag });
    s.ivr.get(legTag)?.close();
    s.ivr.delete(legTag);
    return sdp;
  }

  /**
   * The bridge of a Dial is over: move `legTag` from the dialled leg back to a fresh IvrEndpoint, so the verbs
   * after the Dial (or its action document) play to the caller and Record hears it. Like offerFromIvr it is a
   * re-offer of the caller's own SDP inside rtpengine, now towards the IVR tag; the caller keeps its port and
   * needs no re-INVITE.
   */
  async returnToIvr(callId: string, legTag: string): Promise<void> {
    const s = this.#session(callId);
    const caller = s.callerSdp.get(legTag);
    if (!caller) throw new MediaError('MEDIA_NO_SESSION', `leg ${legTag} of ${callId} is not an IVR leg`);
    await this.#anchorToIvr(callId, legTag, caller, ivrTag(legTag));
  }

  /**
   * Points leg `legTag` (which sent `caller.sdp`) at its IvrEndpoint inside rtpengine: an offer towards the
   * endpoint (G.711, transcoded as needed; `toTag` when the leg is re-pointed inside an existing call) and the
   * endpoint's answer. Returns the SDP for the leg, shaped by its own profile.
   */
  async #anchorToIvr(
    callId: string,
    legTag: string,
    caller: { sdp: string; side?: LegMediaOptions },
    toTag?: string,
  ): Promise<string> {
    const endpoint = await this.#openIvr(callId, legTag);
    const toIvr = await this.offer(callId, legTag, caller.sdp, {
      toSide: { profile: 'rtp', codecs: ['PCMU'] },
      toTag,
    });
    return this.answer(callId, legTag, ivrTag(legTag), endpoint.sdp(toIvr), { fromSide: caller.side });
  }

  /** The platform calls out (IVR as offerer): the SDP to put in the INVITE to `legTag`. */
  async offerIvr(callId: string, legTag: string, opts: { calleeSide?: LegMediaOptions } = {}): Promise<string> {
    const endpoint = await this.#openIvr(callId, legTag);
    this.#session(callId).calleeSide.set(legTag, opts.calleeSide);
    return this.offer(callId, ivrTag(legTag), endpoint.sdp(), { toSide: opts.calleeSide });
  }

  /** The callee's answer to `offerIvr`. */
  async completeIvr(callId: string, legTag: string, calleeSdp: string): Promise<void> {
    // Kept like an inbound caller's offer: a Dial on this call re-offers it towards the dialled leg.
    const s = this.#session(callId);
    s.callerSdp.set(legTag, { sdp: calleeSdp, side: s.calleeSide.get(legTag) });
    await this.answer(callId, ivrTag(legTag), legTag, calleeSdp, { fromSide: { profile: 'rtp' } });
  }

  async #openIvr(callId: string, legTag: string): Promise<IvrEndpoint> {
    const s = this.#session(callId, true);
    const existing = s.ivr.get(legTag);
    if (existing) return existing;
    const endpoint = new IvrEndpoint({ address: this.#address });
    await endpoint.open();
    s.ivr.set(legTag, endpoint);
    return endpoint;
  }

  /** Play a WAV (any format rtpengine's ffmpeg reads) to leg `legTag`. Resolves when it has been played. */
  async playFile(callId: string, legTag: string, path: string, opts: PlaybackOptions = {}): Promise<PlaybackResult> {
    const s = this.#session(callId);
    this.#finishPlayback(s, legTag, false);
    if (opts.signal?.aborted) return { durationMs: 0, completed: false };
    // `play media` plays towards the party named by from-tag (verified with rtpengine 10.5) and answers with
    // the file's duration in ms; 10.5 sends no end-of-playback notice, so the duration is our clock.
    const r = await this.#playStarts.run(() =>
      s.engine.client.playMedia({ 'call-id': callId, 'from-tag': legTag, file: path }),
    );
    const durationMs = typeof r.duration === 'number' ? r.duration : 0;
    opts.onStarted?.(durationMs);
    // A recorded call: rtpengine's pcap does not hold injected audio, so what the caller heard is noted here.
    const prompt: RecordedPrompt | undefined =
      s.recording?.callerTag === legTag ? { startedAtMs: Date.now(), path } : undefined;
    if (prompt) s.recording?.prompts.push(prompt);
    return new Promise<PlaybackResult>((resolve) => {
      const onAbort = (): void => {
        this.#finishPlayback(s, legTag, false);
      };
      const finish = (completed: boolean): void => {
        clearTimeout(playback.timer);
        if (prompt && !completed) prompt.stoppedAtMs = Date.now();
        opts.signal?.removeEventListener('abort', onAbort);
        if (s.playbacks.get(legTag) === playback) s.playbacks.delete(legTag);
        if (!completed && this.#sessions.has(callId)) {
          s.engine.client.stopMedia({ 'call-id': callId, 'from-tag': legTag }).catch(() => undefined);
        }
        resolve({ durationMs, completed });
      };
      const playback: Playback = { timer: setTimeout(() => finish(true), durationMs), finish };
      s.playbacks.set(legTag, playback);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Stop what is playing to `legTag` (barge-in, a new verb). */
  stopPlayback(callId: string, legTag: string): void {
    const s = this.#sessions.get(callId);
    if (s) this.#finishPlayback(s, legTag, false);
  }

  #finishPlayback(s: MediaSession, legTag: string, completed: boolean): void {
    s.playbacks.get(legTag)?.finish(completed);
  }

  /** The Record verb's beep: 500 ms of 1 kHz, made once with sox under dataDir. */
  async playBeep(callId: string, legTag: string, opts: PlaybackOptions = {}): Promise<PlaybackResult> {
    this.#beep ??= (async () => {
      const path = join(this.#recordingsDir, '..', 'beep-1khz-500ms.wav');
      if (!existsSync(path)) {
        await runTool('sox', [
          '-n',
          '-r',
          '8000',
          '-c',
          '1',
          '-b',
          '16',
          path,
          'synth',
          '0.5',
          'sine',
          '1000',
          'vol',
          '0.5',
        ]);
      }
      return path;
    })();
    return this.playFile(callId, legTag, await this.#beep, opts);
  }

  /** Fetch (cached) and play an audio URL; MEDIA_FETCH_FAILED / MEDIA_DECODE_FAILED when it cannot be played. */
  async playUrl(callId: string, legTag: string, url: string, opts: PlaybackOptions = {}): Promise<PlaybackResult> {
    this.#session(callId);
    const audio = await this.fetcher.fetch(url);
    return this.playFile(callId, legTag, audio.path, opts);
  }

  /** Speak text to a leg. `ttsSeconds` counts synthesised audio once per Say (cache hits are not free to bill). */
  async say(
    callId: string,
    legTag: string,
    text: string,
    opts: SayOptions = {},
  ): Promise<{ ttsSeconds: number; tier: string; completed: boolean }> {
    this.#session(callId);
    const speech = await this.tts.synthesize({ text, voice: opts.voice, language: opts.language });
    const times = Math.max(1, opts.loop ?? 1);
    for (let i = 0; i < times; i += 1) {
      const r = await this.playFile(callId, legTag, speech.path, opts);
      if (!r.completed) return { ttsSeconds: speech.seconds, tier: speech.tier, completed: false };
    }
    return { ttsSeconds: speech.seconds, tier: speech.tier, completed: true };
  }

  /** Record what an IVR leg says (Record verb): ends on silence, at max length, or by the signal. */
  record(callId: string, legTag: string, opts: LegRecordOptions = {}): Promise<RecordingResult> {
    const s = this.#session(callId);
    const endpoint = s.ivr.get(legTag);
    if (!endpoint) {
      return Promise.reject(new MediaError('MEDIA_RECORDING_FAILED', `leg ${legTag} is not answered by the platform`));
    }
    this.#recordingSeq += 1;
    return endpoint.record({
      path: join(this.#recordingsDir, `${safe(callId)}-${legTag}-${this.#recordingSeq}.wav`),
      maxLengthMs: (opts.maxLengthSec ?? 3600) * 1000,
      silenceTimeoutMs: (opts.silenceTimeoutSec ?? 5) * 1000,
      signal: opts.signal,
    });
  }

  /** Start recording both directions of a bridged call (RecordSession). */
  async startSessionRecording(callId: string, legs: [string, string]): Promise<void> {
    const s = this.#session(callId);
    if (!this.#engineRecordingDir) {
      throw new MediaError('MEDIA_RECORDING_FAILED', 'RecordSession needs the local engine (its pcaps are read here)');
    }
    const q = await s.engine.client.query({ 'call-id': callId });
    const ports = legs.map((tag) => localPort(q, tag)) as [number, number];
    await s.engine.client.startRecording({ 'call-id': callId });
    this.#recordingSeq += 1;
    s.recording = {
      ports,
      prompts: [],
      startedAtMs: Date.now(),
      path: join(this.#recordingsDir, `${safe(callId)}-session-${this.#recordingSeq}.wav`),
    };
  }

  /**
   * RecordSession on a call the platform answered or placed: the caller (`callerTag`) on the left channel, on the
   * right whatever it hears: our prompts, and any leg a Dial bridges it to (every other rtpengine port of the
   * call, so the far side may change as the call goes between the IVR and bridges). `mono` mixes both.
   */
  async startCallRecording(
    callId: string,
    callerTag: string,
    opts: { maxLengthSec?: number; mono?: boolean } = {},
  ): Promise<void> {
    const s = this.#session(callId);
    if (!this.#engineRecordingDir) {
      throw new MediaError('MEDIA_RECORDING_FAILED', 'RecordSession needs the local engine (its pcaps are read here)');
    }
    if (s.recording) return; // already recording: the first RecordSession wins
    const q = await s.engine.client.query({ 'call-id': callId });
    const callerPort = localPort(q, callerTag);
    await s.engine.client.startRecording({ 'call-id': callId });
    this.#recordingSeq += 1;
    s.recording = {
      callerTag,
      callerPort,
      prompts: [],
      startedAtMs: Date.now(),
      path: join(this.#recordingsDir, `${safe(callId)}-session-${this.#recordingSeq}.wav`),
      maxLengthSec: opts.maxLengthSec,
      mono: opts.mono,
    };
  }

  isRecording(callId: string): boolean {
    return this.#sessions.get(callId)?.recording !== undefined;
  }

  /** Stop RecordSession and write the two-channel WAV. Also done by deleteSession. */
  async stopSessionRecording(callId: string): Promise<RecordingResult> {
    const s = this.#session(callId);
    const rec = s.recording;
    if (!rec || !this.#engineRecordingDir) throw new MediaError('MEDIA_RECORDING_FAILED', 'no session recording');
    s.recording = undefined;
    await s.engine.client.stopRecording({ 'call-id': callId }).catch(() => undefined);
    return this.#convertSessionRecording(callId, rec);
  }

  async #convertSessionRecording(callId: string, rec: NonNullable<MediaSession['recording']>) {
    const pcaps = await findCallPcaps(this.#engineRecordingDir ?? '', callId);
    if (pcaps.length === 0 && rec.prompts.length === 0) {
      throw new MediaError('MEDIA_RECORDING_FAILED', `no pcap for call ${callId}`);
    }
    const callerPort = rec.callerPort;
    return pcapToStereoWav({
      pcapPaths: pcaps,
      legPorts: rec.ports ?? ((port) => (port === callerPort ? 0 : 1)),
      path: rec.path,
      prompts: rec.prompts,
      maxLengthSec: rec.maxLengthSec,
      mono: rec.mono,
      startedAtMs: rec.startedAtMs,
    });
  }

  /**
   * End the call's media: stop playbacks, end recordings (kept), close IVR endpoints, and `delete` the call in
   * rtpengine so its ports are freed. Safe to call twice. Returns the RecordSession file if one was running.
   */
  async deleteSession(callId: string): Promise<{ sessionRecording?: RecordingResult }> {
    const s = this.#sessions.get(callId);
    if (!s) return {};
    this.#sessions.delete(callId);
    for (const p of [...s.playbacks.values()]) p.finish(false);
    for (const e of s.ivr.values()) e.close();
    const rec = s.recording;
    if (rec) await s.engine.client.stopRecording({ 'call-id': callId }).catch(() => undefined);
    await s.engine.client.delete({ 'call-id': callId }).catch((err: MediaError) => {
      // "Call-ID not found" just means the engine never held it (or restarted); nothing leaks there.
      this.#log.debug({ callId, err: err.message }, 'rtpengine delete failed');
    });
    if (!rec) return {};
    try {
      return { sessionRecording: await this.#convertSessionRecording(callId, rec) };
    } catch (err) {
      this.#log.warn({ callId, err: (err as Error).message }, 'session recording lost');
      return {};
    }
  }

  #onEngineLost(address: string): void {
    const lost = [...this.#sessions.values()].filter((s) => s.engine.address === address);
    for (const s of lost) {
      this.#sessions.delete(s.callId);
      for (const p of [...s.playbacks.values()]) p.finish(false);
      for (const e of s.ivr.values()) e.close();
    }
    if (lost.length === 0) return;
    this.#log.warn({ engine: address, calls: lost.length }, 'rtpengine lost with live calls');
    this.safeEmit(
      'sessions-lost',
      lost.map((s) => s.callId),
    );
  }

  /** RTP packets our IVR endpoint of a leg has received (benches, diagnostics). */
  ivrPacketsReceived(callId: string, legTag: string): number {
    return this.#sessions.get(callId)?.ivr.get(legTag)?.packetsReceived ?? 0;
  }

  health(): MediaHealth {
    const engines = this.#engines.list().map((e) => ({ address: e.address, healthy: e.healthy }));
    return { healthy: engines.some((e) => e.healthy), engines, sessions: this.#sessions.size };
  }

  /** Delete every session and stop listening. Safe twice. */
  async close(): Promise<void> {
    await Promise.all([...this.#sessions.keys()].map((id) => this.deleteSession(id)));
    this.#dtmf.close();
  }
}

/** Runs at most `limit` async jobs at once, in arrival order. */
class Limiter {
  #running = 0;
  readonly #queue: Array<() => void> = [];
  constructor(readonly limit: number) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#running += 1;
    try {
      return await job();
    } finally {
      this.#running -= 1;
      this.#queue.shift()?.();
    }
  }
}

function ivrTag(legTag: string): string {
  return `${legTag}-ivr`;
}

function safe(callId: string): string {
  return callId.replace(/[^A-Za-z0-9_.-]/g, '_');
}

/** rtpengine's local RTP port for a leg, from a `query` answer (tags.<tag>.medias[0].streams[0]['local port']). */
function localPort(query: Record<string, unknown>, tag: string): number {
  const tags = query.tags as Record<string, { medias?: Array<{ streams?: Array<{ 'local port'?: number }> }> }>;
  const port = tags[tag]?.medias?.[0]?.streams?.[0]?.['local port'];
  if (typeof port !== 'number') throw new MediaError('MEDIA_RECORDING_FAILED', `leg ${tag} has no media in the engine`);
  return port;
}
