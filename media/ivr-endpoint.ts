import { createSocket, type Socket } from 'node:dgram';
import { decodeG711, rms } from './g711.js';
import { DtmfDetector } from './dtmf-detector.js';
import { MediaError } from './errors.js';
import { DTMF_EVENT_DIGITS, parseRtp } from './rtp-packet.js';
import { audioEndpoint, plainAudioSdp } from './sdp.js';
import { writeWav } from './wav.js';
import { systemClock, type Clock } from '../kit/index.js';

/**
 * The platform's own end of a leg it answers (an IVR leg). rtpengine anchors the caller and treats this socket
 * as the other party: our SDP offers only PCMU (plus telephone-event), so rtpengine transcodes whatever the
 * caller speaks (PCMA, G722, Opus from a browser) to PCMU for us. Prompts go the other way by `play media`
 * towards the caller, so this endpoint never sends.
 *
 * Why a socket we own rather than rtpengine's pcap recording for the Record verb: Record must stop on silence
 * and at a maximum length while the call is live, which needs the audio as it arrives; a pcap is only
 * complete when rtpengine closes it. The pcap path is used for RecordSession (both directions of a bridge),
 * where nothing has to be decided live.
 */
export interface RecordOptions {
  path: string;
  /** Stop after this much audio. */
  maxLengthMs: number;
  /** Stop after this much silence (Twilio's `timeout`); 0 disables. */
  silenceTimeoutMs: number;
  /** RMS (linear, full scale 32768) above which a 20 ms frame counts as voice. */
  voiceThreshold?: number;
  signal?: AbortSignal;
}

export interface RecordingResult {
  path: string;
  durationSec: number;
  sizeBytes: number;
  /** Why it ended: 'silence', 'max-length', 'stopped' (signal or hangup). */
  reason: 'silence' | 'max-length' | 'stopped';
}

const RATE = 8000;
const FRAME = 160; // 20 ms at 8 kHz

interface ActiveRecording {
  opts: RecordOptions;
  chunks: Int16Array[];
  samples: number;
  lastVoiceSample: number;
  heardVoice: boolean;
  startedAt: number;
  lastVoiceAt: number;
  finish: (reason: RecordingResult['reason']) => void;
}

export class IvrEndpoint {
  readonly address: string;
  #socket: Socket | undefined;
  #port = 0;
  #recording: ActiveRecording | undefined;
  #lastTimestamp: number | undefined;
  #packets = 0;
  /** Who hears the caller's audio as it arrives (speech recognition, media/speech/). */
  readonly #taps = new Set<(samples: Int16Array) => void>();
  /** Who takes the caller's PCMU payloads undecoded (queue bridges, media streams: media/streams/). */
  readonly #payloadTaps = new Set<(pcmu: Buffer) => void>();
  /** Who hears the caller's keys (onKeys), and the tone detector for a leg without telephone-event. */
  #onKey: ((digit: string, source: 'rtp-event' | 'inband') => void) | undefined;
  #tones: DtmfDetector | undefined;
  /** The telephone-event payload type we answered with, and the RTP timestamp of the last event seen. */
  #eventPt = 101;
  #lastEventTs: number | undefined;
  /** Where rtpengine expects this party's RTP (from its offer to us): digits injected towards the caller need a
   * stream from us to ride on (media/digit-sender.ts). */
  #engineSide: { address: string; port: number } | undefined;
  readonly #clock: Pick<Clock, 'now'>;

  constructor(opts: { address: string; clock?: Pick<Clock, 'now'> }) {
    this.address = opts.address;
    this.#clock = opts.clock ?? systemClock;
  }

  async open(): Promise<void> {
    const socket = createSocket(this.address.includes(':') ? 'udp6' : 'udp4');
    socket.on('message', (msg) => this.#onPacket(msg));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, this.address, () => resolve());
    });
    this.#socket = socket;
    this.#port = socket.address().port;
  }

  get port(): number {
    return this.#port;
  }

  get packetsReceived(): number {
    return this.#packets;
  }

  /** The SDP rtpengine sees as "the other party" of the caller. */
  /**
   * Our SDP: PCMU and telephone-event. Answering, it takes the offer's payload type for telephone-event/8000 (a
   * browser offers 126): rtpengine drops an event codec whose number the answer changed, and the caller could
   * then send no keys at all.
   */
  sdp(offer?: string): string {
    const engine = offer ? audioEndpoint(offer) : undefined;
    if (engine) this.#engineSide = { address: engine.address, port: engine.port };
    const pt = offer ? /a=rtpmap:(\d+) telephone-event\/8000/i.exec(offer)?.[1] : undefined;
    this.#eventPt = pt === undefined ? 101 : Number(pt);
    return plainAudioSdp({
      address: this.address,
      port: this.#port,
      codecs: ['PCMU', 'telephone-event'],
      payloadTypes: pt === undefined ? undefined : { 'telephone-event': Number(pt) },
    });
  }

  /**
   * rtpengine's answer to our own offer (the platform called out, MediaSession.offerIvr): where this endpoint's
   * audio goes. Without it an endpoint that offered could play only through rtpengine, never send a frame itself.
   */
  engineAnswered(answer: string): void {
    const engine = audioEndpoint(answer);
    if (engine) this.#engineSide = { address: engine.address, port: engine.port };
  }

  /** Hands each 20 ms of the caller's audio (8 kHz PCM) to `onAudio` until the returned function is called. */
  tapAudio(onAudio: (samples: Int16Array) => void): () => void {
    const tap = (samples: Int16Array): void => onAudio(samples);
    this.#taps.add(tap);
    return () => void this.#taps.delete(tap);
  }

  /** Hands each PCMU payload the caller sends, undecoded, to `onPayload` until the returned function is called. */
  tapPayload(onPayload: (pcmu: Buffer) => void): () => void {
    const tap = (pcmu: Buffer): void => onPayload(pcmu);
    this.#payloadTaps.add(tap);
    return () => void this.#payloadTaps.delete(tap);
  }

  /** Sends one RTP packet to rtpengine from this endpoint's own socket (false: not anchored or closed). */
  send(packet: Buffer): boolean {
    const to = this.#engineSide;
    if (!to || !this.#socket) return false;
    this.#socket.send(packet, to.port, to.address);
    return true;
  }

  #onPacket(msg: Buffer): void {
    const rtp = parseRtp(msg);
    if (rtp && rtp.payloadType === this.#eventPt) return this.#onEvent(rtp.timestamp, rtp.payload);
    if (!rtp || rtp.payloadType !== 0) return; // PCMU only
    this.#packets += 1;
    for (const tap of this.#payloadTaps) tap(rtp.payload);
    const rec = this.#recording;
    if (!rec && !this.#tones && this.#taps.size === 0) return;
    const samples = decodeG711(rtp.payload, 0);
    for (const tap of this.#taps) tap(samples);
    if (this.#tones) for (const k of this.#tones.push(samples)) this.#onKey?.(k.digit, 'inband');
    if (!rec) return;
    // Fill gaps (lost packets, DTX) from the RTP timestamp so the recording keeps real time, up to 1 s.
    if (this.#lastTimestamp !== undefined) {
      const gap = (rtp.timestamp - this.#lastTimestamp - FRAME) >>> 0;
      if (gap > 0 && gap <= RATE) this.#append(rec, new Int16Array(gap));
    }
    this.#lastTimestamp = rtp.timestamp;
    this.#append(rec, samples);
  }

  /**
   * The caller's keys as they start: RFC 4733 events (the first packet of each, so a prompt can be barged in on
   * at once; rtpengine's DTMF log reports the same key only when it ends), and with `tones` (a leg that negotiated
   * no telephone-event) keys sent as sound, heard by a Goertzel detector (media/dtmf-detector.ts).
   */
  onKeys(onKey: (digit: string, source: 'rtp-event' | 'inband') => void, opts: { tones: boolean }): void {
    this.#onKey = onKey;
    this.#tones = opts.tones ? new DtmfDetector() : undefined;
  }

  /** RFC 4733 section 2.3: every packet of one event carries the event's start timestamp; a new one is a new key. */
  #onEvent(timestamp: number, payload: Buffer): void {
    if (payload.length < 4 || timestamp === this.#lastEventTs) return;
    const digit = DTMF_EVENT_DIGITS[payload[0]!];
    if (digit === undefined) return;
    this.#lastEventTs = timestamp;
    this.#onKey?.(digit, 'rtp-event');
  }

  #append(rec: ActiveRecording, samples: Int16Array): void {
    const threshold = rec.opts.voiceThreshold ?? 600;
    for (let i = 0; i < samples.length; i += FRAME) {
      if (rms(samples, i, Math.min(samples.length, i + FRAME)) > threshold) {
        rec.heardVoice = true;
        rec.lastVoiceSample = rec.samples + Math.min(samples.length, i + FRAME);
        rec.lastVoiceAt = this.#clock.now();
      }
    }
    rec.chunks.push(samples);
    rec.samples += samples.length;
    if (rec.samples >= (rec.opts.maxLengthMs * RATE) / 1000) rec.finish('max-length');
  }

  /** Record what the caller says. Resolves when the file is written. */
  record(opts: RecordOptions): Promise<RecordingResult> {
    if (this.#recording) return Promise.reject(new MediaError('MEDIA_RECORDING_FAILED', 'already recording'));
    return new Promise<RecordingResult>((resolve, reject) => {
      let done = false;
      const startedAt = this.#clock.now();
      const finish = (reason: RecordingResult['reason']): void => {
        if (done) return;
        done = true;
        clearInterval(watch);
        opts.signal?.removeEventListener('abort', onAbort);
        const rec = this.#recording;
        this.#recording = undefined;
        this.#lastTimestamp = undefined;
        if (!rec) return;
        // On silence, keep 200 ms after the last voiced frame rather than the whole silent tail.
        const keep = reason === 'silence' ? Math.min(rec.samples, rec.lastVoiceSample + RATE / 5) : rec.samples;
        const max = Math.floor((opts.maxLengthMs * RATE) / 1000);
        const all = new Int16Array(Math.min(keep, max));
        let at = 0;
        for (const c of rec.chunks) {
          if (at >= all.length) break;
          all.set(c.subarray(0, all.length - at), at);
          at += c.length;
        }
        writeWav(opts.path, { sampleRate: RATE, channels: 1, samples: all }).then(
          ({ sizeBytes, durationSec }) => resolve({ path: opts.path, sizeBytes, durationSec, reason }),
          (err: Error) => reject(new MediaError('MEDIA_RECORDING_FAILED', err.message, err)),
        );
      };
      const onAbort = (): void => finish('stopped');
      // Silence and the wall-clock limit are checked on a timer too, since a silent caller may send no packets.
      const watch = setInterval(() => {
        const rec = this.#recording;
        if (!rec) return;
        const now = this.#clock.now();
        if (opts.silenceTimeoutMs > 0 && now - rec.lastVoiceAt >= opts.silenceTimeoutMs) finish('silence');
        else if (now - rec.startedAt >= opts.maxLengthMs + 1000) finish('max-length');
      }, 50);
      this.#recording = {
        opts,
        chunks: [],
        samples: 0,
        lastVoiceSample: 0,
        heardVoice: false,
        startedAt,
        lastVoiceAt: startedAt,
        finish,
      };
      if (opts.signal?.aborted) finish('stopped');
      else opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Ends a recording in progress (keeping what it has) and closes the socket. Safe twice. */
  close(): void {
    this.#recording?.finish('stopped');
    this.#socket?.close();
    this.#socket = undefined;
  }
}
