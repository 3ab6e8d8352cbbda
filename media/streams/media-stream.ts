import { randomBytes } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';
import { signWebhook } from '../../events/index.js';
import { resolveAllowed, systemClock, type Clock, type UrlPolicy } from '../../kit/index.js';
import { MediaError } from '../errors.js';
import { SILENCE_FRAME, type LegAudioPort } from './audio-port.js';
import { FrameTicker } from './frame-ticker.js';
import {
  MAX_INBOUND_MESSAGE_BYTES,
  connectedMessage,
  dtmfMessage,
  markMessage,
  mediaMessage,
  parseInbound,
  startMessage,
  stopMessage,
  type StreamTrack,
} from './messages.js';
import { Playout } from './playout.js';
import { TrackClock } from './track-clock.js';

/** Longest the WebSocket handshake may take. */
export const STREAM_CONNECT_TIMEOUT_MS = 5_000;
/**
 * Most bytes waiting in the socket's send buffer before audio frames are dropped: about 0.7 s of media messages.
 * A slow consumer loses audio; the call and the process never wait for it.
 */
export const MAX_SEND_BUFFER_BYTES = 64 * 1024;

export interface MediaStreamOptions {
  readonly url: string;
  readonly track: StreamTrack;
  /** Bidirectional (<Connect><Stream>): the server's media is played to the caller; its marks and clear obeyed. */
  readonly bidirectional: boolean;
  readonly callSid: string;
  readonly accountSid: string;
  readonly customParameters: Readonly<Record<string, string>>;
  /** The account's signing secret: the upgrade request carries X-Voice-Timestamp and X-Voice-Signature. */
  readonly secret: string;
  readonly policy: UrlPolicy;
  readonly port: LegAudioPort;
  readonly clock?: Pick<Clock, 'now'>;
  /** The 20 ms clock of silence frames and of the server's audio to the caller; the process's own unless a test's. */
  readonly ticker?: FrameTicker;
  readonly maxSendBufferBytes?: number;
}

export interface MediaStreamStats {
  /** Media frames handed to the socket (silence frames included). */
  readonly framesSent: number;
  /** Media frames dropped because the consumer was not reading (send buffer full). */
  readonly framesDropped: number;
  /** Bytes of the server's audio dropped because more than a minute was queued. */
  readonly playoutBytesDropped: number;
}

/** The URL as signed: scheme, host (default port dropped), path and query; never a fragment. */
export function streamRequestUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}${url.search}`;
}

/**
 * One media stream (Twilio Media Streams over the ws package): the caller's audio from our IVR end of the leg to
 * the customer's WebSocket as `media` messages, and on a bidirectional stream the server's audio back to the
 * caller at real time through a Playout queue (marks, clear). The connection is made to the address the UrlPolicy
 * allowed (pinned, as the guarded fetch does), with the webhook signature on the upgrade request.
 */
export class MediaStream {
  readonly streamSid = `MZ${randomBytes(16).toString('hex')}`;
  readonly #o: MediaStreamOptions;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #playout = new Playout();
  #ws: WebSocket | undefined;
  #seq = 1;
  #inboundChunk = 0;
  #outboundChunk = 0;
  #startedAt = 0;
  #sent = 0;
  #dropped = 0;
  /** The clock of each track the stream carries: silence frames stand in while it has no audio. */
  #tracks: { readonly track: 'inbound' | 'outbound'; readonly clock: TrackClock }[] = [];
  #untaps: (() => void)[] = [];
  #untick: (() => void) | undefined;
  #stopped = false;
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  constructor(options: MediaStreamOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.closed = new Promise((r) => (this.#resolveClosed = r));
  }

  get stats(): MediaStreamStats {
    return { framesSent: this.#sent, framesDropped: this.#dropped, playoutBytesDropped: this.#playout.dropped };
  }

  /** Opens the WebSocket and starts streaming; rejects with MediaError MEDIA_STREAM_FAILED when it cannot. */
  async start(): Promise<void> {
    let url: URL;
    try {
      url = new URL(this.#o.url);
    } catch {
      throw new MediaError('MEDIA_STREAM_FAILED', 'the stream URL is not an absolute URL');
    }
    if (url.protocol !== 'wss:' && url.protocol !== 'ws:') {
      throw new MediaError('MEDIA_STREAM_FAILED', 'a stream URL is ws:// or wss://');
    }
    const signal = AbortSignal.timeout(STREAM_CONNECT_TIMEOUT_MS);
    let to;
    try {
      // resolveAllowed checks http(s) URLs' hosts; a ws URL's host is checked the same way.
      to = await resolveAllowed(url, this.#o.policy, signal);
    } catch (err) {
      throw new MediaError('MEDIA_STREAM_FAILED', (err as Error).message, err);
    }
    const lookup: LookupFunction = (_host, opts, done) => {
      if (opts.all) done(null, [{ address: to.address, family: to.family }]);
      else done(null, to.address, to.family);
    };
    const timestamp = String(Math.floor(this.#clock.now() / 1000));
    const ws = new WebSocket(url, {
      lookup,
      handshakeTimeout: STREAM_CONNECT_TIMEOUT_MS,
      maxPayload: MAX_INBOUND_MESSAGE_BYTES,
      followRedirects: false,
      perMessageDeflate: false,
      headers: {
        'X-Voice-Timestamp': timestamp,
        'X-Voice-Signature': signWebhook(this.#o.secret, streamRequestUrl(url), timestamp, ''),
      },
    });
    this.#ws = ws;
    ws.on('close', () => this.#finish());
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (err) => reject(new MediaError('MEDIA_STREAM_FAILED', err.message, err)));
    }).catch((err: unknown) => {
      ws.terminate();
      this.#finish();
      throw err;
    });
    ws.on('error', () => undefined); // the close that follows ends the stream
    this.#startedAt = this.#clock.now();
    this.#send(connectedMessage());
    this.#send(startMessage(this.#seq++, { ...this.#o, streamSid: this.streamSid }));
    const { track, port } = this.#o;
    if (track !== 'outbound_track') this.#carry('inbound', (fn) => port.onReceived(fn));
    if (track !== 'inbound_track') this.#carry('outbound', (fn) => port.onSent(fn));
    if (this.#o.bidirectional) {
      ws.on('message', (data, isBinary) => {
        if (!isBinary) this.#onServerMessage(data.toString());
      });
    }
    this.#untick = (this.#o.ticker ?? FrameTicker.shared).add(() => this.#tick());
  }

  #carry(track: 'inbound' | 'outbound', tap: (fn: (pcmu: Buffer) => void) => () => void): void {
    const clock = new TrackClock(this.#startedAt);
    this.#tracks.push({ track, clock });
    this.#untaps.push(
      tap((pcmu) => {
        const now = this.#clock.now();
        clock.heard(now);
        this.#media(track, pcmu, now);
      }),
    );
  }

  /** A key the caller pressed (Twilio sends `dtmf` on bidirectional streams; Simu on every stream). */
  dtmf(digit: string): void {
    if (!this.#stopped) this.#send(dtmfMessage(this.#seq++, this.streamSid, digit));
  }

  /** Sends `stop` and closes the socket (1000); safe twice. Resolves when closed. */
  async stop(): Promise<void> {
    if (!this.#stopped && this.#ws?.readyState === WebSocket.OPEN) {
      this.#send(stopMessage(this.#seq++, this.streamSid, this.#o.accountSid, this.#o.callSid));
      this.#ws.close(1000);
      // A server that never answers the close handshake is cut after a second.
      const ws = this.#ws;
      setTimeout(() => ws.terminate(), 1000).unref();
    } else {
      this.#ws?.terminate();
      this.#finish();
    }
    await this.closed;
  }

  #media(track: 'inbound' | 'outbound', pcmu: Buffer, atMs: number): void {
    const ws = this.#ws;
    if (this.#stopped || !ws || ws.readyState !== WebSocket.OPEN) return;
    const chunk = track === 'inbound' ? ++this.#inboundChunk : ++this.#outboundChunk;
    if (ws.bufferedAmount > (this.#o.maxSendBufferBytes ?? MAX_SEND_BUFFER_BYTES)) {
      this.#dropped += 1;
      return;
    }
    this.#sent += 1;
    ws.send(mediaMessage(this.#seq++, this.streamSid, track, chunk, atMs - this.#startedAt, pcmu));
  }

  #onServerMessage(text: string): void {
    const m = parseInbound(text);
    if (!m || this.#stopped) return;
    if (m.event === 'media') this.#playout.push(m.pcmu);
    else if (m.event === 'mark') this.#playout.mark(m.name);
    else for (const name of this.#playout.clear()) this.#send(markMessage(this.#seq++, this.streamSid, name));
  }

  /**
   * Every 20 ms: silence frames for each track that has had no audio, and on a bidirectional stream the next frame
   * of the server's audio to the caller, or a silence frame when none is queued, so the caller's RTP keeps its
   * clock (its jitter buffer and a carrier's media timeout see a steady stream, before the first audio and after
   * a `clear`).
   */
  #tick(): void {
    const now = this.#clock.now();
    for (const { track, clock } of this.#tracks) clock.tick(now, (at) => this.#media(track, SILENCE_FRAME, at));
    if (!this.#o.bidirectional) return;
    this.#o.port.send(this.#playout.nextFrame() ?? SILENCE_FRAME);
    for (const name of this.#playout.takeReachedMarks()) this.#send(markMessage(this.#seq++, this.streamSid, name));
  }

  #send(text: string): void {
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.send(text);
  }

  #finish(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#untick?.();
    for (const untap of this.#untaps) untap();
    this.#untaps = [];
    this.#resolveClosed();
  }
}
