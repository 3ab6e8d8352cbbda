import type { Logger } from '../../config/index.js';
import { EventCodes } from '../../events/index.js';
import { MediaError, MediaStream, type LegAudioPort } from '../../media/index.js';
import type { UrlPolicy } from '../../kit/index.js';
import type { StreamNoun } from '../../verbs/index.js';
import type { CallLifecycle } from '../lifecycle.js';

/** Most streams one call holds at once (Twilio allows four forked streams per call). */
export const MAX_STREAMS_PER_CALL = 4;

export interface CallStreamsDeps {
  readonly life: CallLifecycle;
  readonly log: Logger;
  readonly policy: UrlPolicy;
  /** The account's current signing secret (the upgrade request is signed like every webhook). */
  secret(): Promise<string>;
  /** The caller's audio at our end of its leg; throws MediaError when the leg is not the platform's now. */
  port(): LegAudioPort;
  /** Deduplicated keys the caller presses (CallDigits); the returned function stops listening. */
  listenKeys(fn: (digit: string) => void): () => void;
}

/**
 * The media streams of one call: <Start><Stream> forks, <Stop><Stream>, <Connect><Stream>, and
 * the end of the call stopping every one. STREAM.0100 when a stream opens, STREAM.0300 when it ends (with the
 * frames sent and dropped), STREAM.0400 when it could not open (the call goes on).
 */
export class CallStreams {
  readonly #d: CallStreamsDeps;
  readonly #open = new Map<MediaStream, string | undefined>();
  #unlisten: (() => void) | undefined;
  /** The call ended: a stream still connecting is stopped as soon as it opens. */
  #closed = false;

  constructor(deps: CallStreamsDeps) {
    this.#d = deps;
  }

  async start(noun: StreamNoun): Promise<void> {
    await this.#open_(noun, false);
  }

  async stop(name: string | undefined): Promise<void> {
    const stopping = [...this.#open.entries()].filter(([, n]) => name === undefined || n === name);
    await Promise.all(stopping.map(([s]) => s.stop()));
  }

  async connect(noun: StreamNoun, signal: AbortSignal): Promise<'closed' | 'failed'> {
    const stream = await this.#open_(noun, true);
    if (!stream) return 'failed';
    const onAbort = (): void => void stream.stop();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await stream.closed;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    return 'closed';
  }

  /** The call ended: every stream is stopped (a `stop` message, then the close). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.stop(undefined);
  }

  async #open_(noun: StreamNoun, bidirectional: boolean): Promise<MediaStream | undefined> {
    const row = this.#d.life.row;
    const fail = (reason: string): undefined => {
      void this.#d.life.emit(EventCodes.streamFailed, { url: noun.url, reason });
      return undefined;
    };
    if (this.#closed) return undefined;
    if (this.#open.size >= MAX_STREAMS_PER_CALL) return fail(`a call holds at most ${MAX_STREAMS_PER_CALL} streams`);
    let stream: MediaStream;
    try {
      stream = new MediaStream({
        url: noun.url,
        track: bidirectional ? 'inbound_track' : noun.track,
        bidirectional,
        callSid: row.sid,
        accountSid: row.account_id,
        customParameters: noun.parameters,
        secret: await this.#d.secret(),
        policy: this.#d.policy,
        port: this.#d.port(),
      });
      await stream.start();
    } catch (e) {
      if (!(e instanceof MediaError)) throw e;
      this.#d.log.info({ call: row.sid, code: e.code, err: e.message }, 'media stream not opened');
      return fail(e.message);
    }
    if (this.#closed) {
      await stream.stop(); // the call ended while the socket was opening
      return undefined;
    }
    this.#open.set(stream, noun.name);
    this.#unlisten ??= this.#d.listenKeys((digit) => {
      for (const s of this.#open.keys()) s.dtmf(digit);
    });
    void this.#d.life.emit(EventCodes.streamStarted, {
      streamSid: stream.streamSid,
      track: bidirectional ? 'inbound_track' : noun.track,
      bidirectional,
      ...(noun.name === undefined ? {} : { name: noun.name }),
    });
    void stream.closed.then(() => {
      this.#open.delete(stream);
      if (this.#open.size === 0) {
        this.#unlisten?.();
        this.#unlisten = undefined;
      }
      void this.#d.life.emit(EventCodes.streamStopped, { streamSid: stream.streamSid, ...stream.stats });
    });
    return stream;
  }
}
