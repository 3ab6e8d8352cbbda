import { MediaError } from '../media/index.js';
import { getAccountSettings } from '../store/index.js';
import type { DialOptions, DialResult, QueueTicket, StreamNoun } from '../verbs/index.js';
import type { CallMedia } from './call-media.js';
import type { CallServices } from './call-services.js';
import type { CallLifecycle } from './call-lifecycle.js';
import { CallQueueing } from './queue/call-queueing.js';
import { holdAudioFile } from './queue/hold-audio.js';
import { CallStreams } from './streams/call-streams.js';

const FAILED_DIAL: DialResult = { status: 'failed', durationSeconds: 0 };

/**
 * One call's queues (calls/queue/) and media streams (calls/streams/): what CallVerbs runs <Enqueue>, <Dial><Queue>,
 * <Start>/<Stop>/<Connect> <Stream> through, on the caller's audio port at our IVR end of its leg. The line is
 * answered by CallVerbs before any of these.
 */
export class CallLiveVerbs {
  readonly #d: CallServices;
  readonly #media: CallMedia;
  readonly #life: CallLifecycle;
  /** Deduplicated keys the caller presses (CallDigits); the returned function stops listening. */
  readonly #listenKeys: (fn: (digit: string) => void) => () => void;
  #queueing: CallQueueing | undefined;
  #streams: CallStreams | undefined;

  constructor(
    services: CallServices,
    media: CallMedia,
    life: CallLifecycle,
    listenKeys: (fn: (digit: string) => void) => () => void,
  ) {
    this.#d = services;
    this.#media = media;
    this.#life = life;
    this.#listenKeys = listenKeys;
  }

  joinQueue(name: string, maxSize: number): Promise<QueueTicket> {
    const queues = this.#queues();
    if (!queues) throw new TypeError('no queues in this set-up');
    return queues.join(name, maxSize);
  }

  dialQueue(name: string, options: DialOptions): Promise<DialResult> {
    return this.#queues()?.dial(name, options) ?? Promise.resolve(FAILED_DIAL);
  }

  async playHold(signal: AbortSignal): Promise<void> {
    await this.#media.playFile(await holdAudioFile(), { signal });
  }

  startStream(stream: StreamNoun): Promise<void> {
    return this.#callStreams().start(stream);
  }

  async stopStream(name: string | undefined): Promise<void> {
    await this.#streams?.stop(name);
  }

  connectStream(stream: StreamNoun, signal: AbortSignal): Promise<'closed' | 'failed'> {
    return this.#callStreams().connect(stream, signal);
  }

  /** The call ended: its streams send `stop` and close. */
  closeStreams(): Promise<void> {
    return this.#streams?.close() ?? Promise.resolve();
  }

  #port() {
    const media = this.#media;
    if (!media.audioPort) throw new MediaError('MEDIA_NO_SESSION', 'no audio port in this set-up');
    return media.audioPort();
  }

  #queues(): CallQueueing | undefined {
    const { queues } = this.#d;
    const media = this.#media;
    const life = this.#life;
    if (!queues || !media.audioPort) return undefined;
    this.#queueing ??= new CallQueueing(queues, life, () => this.#port(), this.#d.queueNodes);
    return this.#queueing;
  }

  #callStreams(): CallStreams {
    const { db } = this.#d;
    const life = this.#life;
    this.#streams ??= new CallStreams({
      life,
      log: this.#d.log,
      policy: this.#d.urlPolicy,
      secret: async () => (await getAccountSettings(db, life.row.account_id)).signing_secret,
      port: () => this.#port(),
      listenKeys: (fn) => this.#listenKeys(fn),
    });
    return this.#streams;
  }
}
