import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../config/index.js';
import { systemClock, TypedEmitter, type Clock, type UrlPolicy } from '../kit/index.js';
import { AudioFetcher } from './audio-fetch.js';
import { DtmfListener, type DtmfEvent } from './dtmf-listener.js';
import { MediaError } from './errors.js';
import type { RecordingResult } from './ivr-endpoint.js';
import type { LegMediaOptions } from './leg-profiles.js';
import { Limiter } from './limiter.js';
import { MediaSession, type LegRecordOptions, type SessionEngine } from './media-session.js';
import type { PlaybackOptions, PlaybackResult } from './playback.js';
import { runTool } from './run-tool.js';
import type { AudioCodec } from './sdp.js';
import { EspeakTtsEngine, type TtsEngine, type TtsSubstitution } from './tts.js';
import type { LegAudioPort } from './streams/audio-port.js';

export type { PlaybackOptions, PlaybackResult } from './playback.js';
export type { LegRecordOptions } from './media-session.js';

/**
 * The media of calls, as the calls room and the verbs use it. One MediaSession per call id (media-session.ts),
 * pinned to the rtpengine that anchored it; legs are named by tags (the SIP dialog's from/to tags, or any stable
 * leg id). The service picks the engine, creates and looks up sessions (`openSession`, `session`), and owns what
 * sessions share: the DTMF log, TTS, the audio fetcher, the limit on `play media` starts. Each per-call method
 * below is the same method of the call's session; `deleteSession` is `session.close()`.
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
export interface SayOptions extends PlaybackOptions {
  voice?: string;
  language?: string;
  /** The text is SSML (TtsRequest.ssml). */
  ssml?: boolean;
  /** Times to play; 0 is treated as 1 here (callers bound "loop forever" themselves). */
  loop?: number;
}

/** A Say played: the seconds synthesised (billed), by which tier, and what of the voice asked for was not had. */
export interface SayResult {
  ttsSeconds: number;
  tier: string;
  completed: boolean;
  substituted: readonly TtsSubstitution[];
}

export interface MediaHealth {
  healthy: boolean;
  engines: Array<{ address: string; healthy: boolean }>;
  sessions: number;
}

/** Where new calls are anchored: `MediaEngines` (an interface here so unit tests can hand in a fake engine). */
export interface MediaEnginePool {
  pick(): SessionEngine;
  list(): Array<{ address: string; healthy: boolean }>;
  on(event: 'engine-lost', listener: (address: string, at: number) => void): unknown;
  /** Whether the engine restores its calls after a restart (Redis); undefined: not known, so it is asked. */
  persistent?(address: string): boolean | undefined;
  isHealthy?(address: string): boolean;
}

export interface MediaServiceOptions {
  engines: MediaEnginePool;
  dataDir: string;
  logger: Logger;
  /** rtpengine's --recording-dir (RecordSession reads its pcaps there; local engines only). */
  engineRecordingDir?: string;
  /** Address our IVR endpoints bind to; must be reachable by the engine. */
  localMediaAddress?: string;
  tts?: TtsEngine;
  fetcher?: AudioFetcher;
  /** Where Play and fallback audio URLs may point, for the default fetcher (SSRF). Default: public only. */
  urlPolicy?: UrlPolicy;
  /** Receive rtpengine's DTMF log on this port (the engine must have --dtmf-log-dest pointing here). */
  dtmfPort?: number;
  /**
   * The kit's one Clock (STYLE.md 4): playback timers, and the timestamps of what a session played and recorded
   * (epoch ms with the default systemClock: recordings line prompts up against pcap capture times).
   */
  clock?: Clock;
  /**
   * How long a call whose engine was lost may wait for it to come back with the call restored (Redis) before it
   * is given up as lost. Default 4 s; an engine known to keep nothing is not waited for.
   */
  restoreWindowMs?: number;
}

/**
 * 'dtmf': a digit from a leg. 'sessions-lost': the engine holding these calls died and they did not come back
 * (their media is gone; the calls room ends them, billed to `at`). Their sessions are already closed here.
 * 'sessions-restored': the engine came back holding these calls (Redis), their media resumes; `gapMs` from the loss.
 */
export type MediaServiceEvents = {
  dtmf: [DtmfEvent];
  'sessions-lost': [callIds: string[], at: number];
  'sessions-restored': [callIds: string[], gapMs: number];
};

export class MediaService extends TypedEmitter<MediaServiceEvents> {
  readonly #engines: MediaEnginePool;
  readonly #sessions = new Map<string, MediaSession>();
  readonly #log: Logger;
  readonly #address: string;
  readonly #recordingsDir: string;
  readonly #engineRecordingDir: string | undefined;
  readonly #clock: Clock;
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
  readonly #restoreWindowMs: number;

  constructor(opts: MediaServiceOptions) {
    super(opts.logger);
    this.#engines = opts.engines;
    this.#log = opts.logger;
    this.#address = opts.localMediaAddress ?? '127.0.0.1';
    this.#recordingsDir = join(opts.dataDir, 'recordings');
    mkdirSync(this.#recordingsDir, { recursive: true });
    this.#engineRecordingDir = opts.engineRecordingDir;
    this.#clock = opts.clock ?? systemClock;
    this.tts = opts.tts ?? new EspeakTtsEngine({ cacheDir: join(opts.dataDir, 'tts-cache') });
    this.fetcher =
      opts.fetcher ??
      new AudioFetcher({
        cacheDir: join(opts.dataDir, 'audio-cache'),
        ...(opts.urlPolicy === undefined ? {} : { urlPolicy: opts.urlPolicy }),
      });
    this.#dtmfPort = opts.dtmfPort;
    this.#restoreWindowMs = opts.restoreWindowMs ?? 4000;
    this.#engines.on('engine-lost', (address, at) => void this.#onEngineLost(address, at));
    this.#dtmf.on('dtmf', (e) => {
      if (this.#sessions.has(e.callId)) this.safeEmit('dtmf', e);
    });
  }

  async start(): Promise<void> {
    if (this.#dtmfPort !== undefined) await this.#dtmf.listen(this.#dtmfPort);
  }

  /** The live session of a call, if any. */
  session(callId: string): MediaSession | undefined {
    return this.#sessions.get(callId);
  }

  /** The call's session, created on the next engine when it has none (MEDIA_NO_ENGINE when none is healthy). */
  openSession(callId: string): MediaSession {
    const existing = this.#sessions.get(callId);
    if (existing) return existing;
    const callPrefix = safe(callId);
    const session = new MediaSession({
      callId,
      engine: this.#engines.pick(),
      clock: this.#clock,
      log: this.#log,
      localMediaAddress: this.#address,
      engineRecordingDir: this.#engineRecordingDir,
      recordingPath: (kind) => join(this.#recordingsDir, `${callPrefix}-${kind}-${(this.#recordingSeq += 1)}.wav`),
      playStarts: this.#playStarts,
    });
    // However it closes (deleteSession, its own close(), its engine lost), a closed session is looked up no more.
    session.on('key', (legTag, digit, source) => {
      this.safeEmit('dtmf', { callId, legTag, digit, durationMs: 0, source });
    });
    session.once('close', () => {
      if (this.#sessions.get(callId) === session) this.#sessions.delete(callId);
    });
    this.#sessions.set(callId, session);
    return session;
  }

  #session(callId: string): MediaSession {
    const s = this.#sessions.get(callId);
    if (!s) throw new MediaError('MEDIA_NO_SESSION', `no media session for call ${callId}`);
    return s;
  }

  /** The media profile a leg the platform answered or placed was set up with (undefined: plain RTP). */
  legSide(callId: string, legTag: string): LegMediaOptions | undefined {
    return this.#sessions.get(callId)?.legSide(legTag);
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
    return this.openSession(callId).offer(fromTag, sdp, opts);
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
    return this.#session(callId).answer(fromTag, toTag, sdp, opts);
  }

  /** Answer leg `legTag` with the platform itself (IVR); returns the SDP to answer the caller with. */
  async answerIvr(callId: string, legTag: string, callerSdp: string, opts: { callerSide?: LegMediaOptions } = {}) {
    return this.openSession(callId).answerIvr(legTag, callerSdp, opts);
  }

  /**
   * Dial from an IVR-answered caller: move `legTag` from our IvrEndpoint to a new leg `toTag`. Returns the SDP
   * for the INVITE to `toTag`; finish with `answer(callId, legTag, toTag, sdpFromB)`. The caller is not
   * re-INVITEd: with rtpengine 10.5 the caller's original port keeps relaying to the new leg (tested), so the
   * SDP `answer` returns for the caller may be ignored.
   */
  async offerFromIvr(callId: string, legTag: string, toTag: string, opts: { toSide?: LegMediaOptions } = {}) {
    return this.#session(callId).offerFromIvr(legTag, toTag, opts);
  }

  /**
   * The bridge of a Dial is over: move `legTag` from the dialled leg back to a fresh IvrEndpoint, so the verbs
   * after the Dial (or its action document) play to the caller and Record hears it. Like offerFromIvr it is a
   * re-offer of the caller's own SDP inside rtpengine, now towards the IVR tag; the caller keeps its port and
   * needs no re-INVITE.
   */
  async returnToIvr(callId: string, legTag: string): Promise<void> {
    return this.#session(callId).returnToIvr(legTag);
  }

  /** The platform calls out (IVR as offerer): the SDP to put in the INVITE to `legTag`. */
  async offerIvr(callId: string, legTag: string, opts: { calleeSide?: LegMediaOptions } = {}): Promise<string> {
    return this.openSession(callId).offerIvr(legTag, opts);
  }

  /** The callee's answer to `offerIvr`. */
  async completeIvr(callId: string, legTag: string, calleeSdp: string): Promise<void> {
    return this.#session(callId).completeIvr(legTag, calleeSdp);
  }

  /** Play a WAV (any format rtpengine's ffmpeg reads) to leg `legTag`. Resolves when it has been played. */
  async playFile(callId: string, legTag: string, path: string, opts: PlaybackOptions = {}): Promise<PlaybackResult> {
    return this.#session(callId).play(legTag, path, opts);
  }

  /** Stop what is playing to `legTag` (barge-in, a new verb). */
  stopPlayback(callId: string, legTag: string): void {
    this.#sessions.get(callId)?.stopPlayback(legTag);
  }

  /** The Record verb's beep: 500 ms of 1 kHz, made once with sox under dataDir. */
  async playBeep(callId: string, legTag: string, opts: PlaybackOptions = {}): Promise<PlaybackResult> {
    this.#beep ??= (async () => {
      const path = join(this.#recordingsDir, '..', 'beep-1khz-500ms.wav');
      if (!existsSync(path)) {
        const synth = ['synth', '0.5', 'sine', '1000', 'vol', '0.5'];
        await runTool('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', path, ...synth]);
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
  async say(callId: string, legTag: string, text: string, opts: SayOptions = {}): Promise<SayResult> {
    this.#session(callId);
    const speech = await this.tts.synthesize({
      text,
      voice: opts.voice,
      language: opts.language,
      ...(opts.ssml ? { ssml: true } : {}),
    });
    const said = { ttsSeconds: speech.seconds, tier: speech.tier, substituted: speech.substituted };
    const times = Math.max(1, opts.loop ?? 1);
    for (let i = 0; i < times; i += 1) {
      const r = await this.playFile(callId, legTag, speech.path, opts);
      if (!r.completed) return { ...said, completed: false };
    }
    return { ...said, completed: true };
  }

  /** Record what an IVR leg says (Record verb): ends on silence, at max length, or by the signal. */
  async record(callId: string, legTag: string, opts: LegRecordOptions = {}): Promise<RecordingResult> {
    return this.#session(callId).record(legTag, opts);
  }

  /** RFC 4733 digits into the call towards leg `legTag` (MediaSession.sendDigits); resolves once played out. */
  async sendDigits(callId: string, legTag: string, digits: string, opts: { signal?: AbortSignal } = {}) {
    return this.#session(callId).sendDigits(legTag, digits, opts);
  }

  /** The caller's audio of an IVR leg both ways as PCMU frames (MediaSession.audioPort). */
  audioPort(callId: string, legTag: string): LegAudioPort {
    return this.#session(callId).audioPort(legTag);
  }

  /** The caller's audio of an IVR leg as it arrives (MediaSession.tapAudio); the returned function stops it. */
  tapAudio(callId: string, legTag: string, onAudio: (samples: Int16Array) => void): () => void {
    return this.#session(callId).tapAudio(legTag, onAudio);
  }

  /** Start recording both directions of a bridged call (RecordSession). */
  /** A copy of what leg `legTag` sends, bridged or not (MediaSession.forkAudio); the returned function stops it. */
  forkAudio(callId: string, legTag: string, onAudio: (samples: Int16Array) => void): Promise<() => void> {
    return this.#session(callId).forkAudio(legTag, onAudio);
  }

  async startSessionRecording(callId: string, legs: [string, string]): Promise<void> {
    return this.#session(callId).startRecording({ kind: 'bridge', legs });
  }

  /**
   * RecordSession on a call the platform answered or placed: the caller (`callerTag`) on the left channel, on the
   * right whatever it hears: our prompts, and any leg a Dial bridges it to (every other rtpengine port of the
   * call, so the far side may change as the call goes between the IVR and bridges). `mono` mixes both. The
   * first RecordSession of a call wins.
   */
  async startCallRecording(
    callId: string,
    callerTag: string,
    opts: { maxLengthSec?: number; mono?: boolean } = {},
  ): Promise<void> {
    return this.#session(callId).startRecording({ kind: 'caller', callerTag, ...opts });
  }

  isRecording(callId: string): boolean {
    return this.#sessions.get(callId)?.isRecording ?? false;
  }

  /** Stop RecordSession and write the two-channel WAV. Also done by deleteSession. */
  async stopSessionRecording(callId: string): Promise<RecordingResult> {
    return this.#session(callId).stopRecording();
  }

  /**
   * End the call's media (MediaSession.close): stop playbacks, end recordings (kept), close IVR endpoints, and
   * `delete` the call in rtpengine so its ports are freed. Safe to call twice. Returns the RecordSession file if
   * one was running.
   */
  async deleteSession(callId: string): Promise<{ sessionRecording?: RecordingResult }> {
    const s = this.#sessions.get(callId);
    if (!s) return {};
    return s.close();
  }

  /**
   * An engine died with calls on it. An engine that keeps its calls in Redis (or may: an external one) is given
   * `restoreWindowMs` to answer again; each call it then still holds (ng `query`) is restored and goes on. The
   * others are lost: their sessions close and 'sessions-lost' tells the calls room, with the moment of the loss.
   */
  async #onEngineLost(address: string, at: number): Promise<void> {
    const onEngine = (): MediaSession[] => [...this.#sessions.values()].filter((s) => s.engine.address === address);
    if (onEngine().length === 0) return;
    const restored: MediaSession[] = [];
    if (this.#engines.persistent?.(address) !== false) {
      const up = await this.#waitForEngine(address, at + this.#restoreWindowMs);
      for (const s of up ? onEngine() : []) {
        const held = await s.engine.client.query({ 'call-id': s.callId }).then(
          () => true,
          () => false,
        );
        if (held && !s.closed) restored.push(s);
      }
    }
    const lost = onEngine().filter((s) => !restored.includes(s));
    if (restored.length > 0) {
      const gapMs = Date.now() - at;
      this.#log.warn({ engine: address, calls: restored.length, gapMs }, 'rtpengine restarted; calls restored');
      this.safeEmit(
        'sessions-restored',
        restored.map((s) => s.callId),
        gapMs,
      );
    }
    if (lost.length === 0) return;
    for (const s of lost) void s.close('engine-lost');
    this.#log.warn({ engine: address, calls: lost.length }, 'rtpengine lost with live calls; ending them');
    this.safeEmit(
      'sessions-lost',
      lost.map((s) => s.callId),
      at,
    );
  }

  /** Resolves true once the engine at `address` answers its ping, false at `deadline` (epoch ms). */
  async #waitForEngine(address: string, deadline: number): Promise<boolean> {
    const healthy = (): boolean =>
      this.#engines.isHealthy?.(address) ?? this.#engines.list().some((e) => e.address === address && e.healthy);
    while (!healthy()) {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
    return true;
  }

  /** RTP packets our IVR endpoint of a leg has received (benches, diagnostics). */
  ivrPacketsReceived(callId: string, legTag: string): number {
    return this.#sessions.get(callId)?.ivrPacketsReceived(legTag) ?? 0;
  }

  health(): MediaHealth {
    const engines = this.#engines.list().map((e) => ({ address: e.address, healthy: e.healthy }));
    return { healthy: engines.some((e) => e.healthy), engines, sessions: this.#sessions.size };
  }

  /** Close every session and stop listening. Safe twice. */
  async close(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map((s) => s.close()));
    this.#dtmf.close();
  }
}

function safe(callId: string): string {
  return callId.replace(/[^A-Za-z0-9_.-]/g, '_');
}
