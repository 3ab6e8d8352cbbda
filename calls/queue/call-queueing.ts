import { EventCodes } from '../../events/index.js';
import type { LegAudioPort } from '../../media/index.js';
import type { DialOptions, DialResult, QueueTicket } from '../../verbs/index.js';
import type { CallLifecycle } from '../call-lifecycle.js';
import type { QueueNodes } from './node-queue.js';
import { bridgeAudio } from './queue-bridge.js';
import type { QueueCall, QueueEvents, QueueRegistry } from './queue-registry.js';

/** The QUEUE.* events, on the caller's own call (its stream and status callbacks). */
export const queueEvents: QueueEvents = {
  joined: (call, queue, position) => call.emit(EventCodes.queueJoined, { queue, position }),
  bridged: (call, queue, queueTime, agentCallId) =>
    call.emit(EventCodes.queueBridged, { queue, queueTime, agentCallUuid: agentCallId }),
  left: (call, queue, result, queueTime) => call.emit(EventCodes.queueLeft, { queue, result, queueTime }),
};

/** One call's side of the queues: waiting in one (<Enqueue>) or taking a caller from one (<Dial><Queue>). */
export class CallQueueing {
  readonly #registry: QueueRegistry;
  readonly #life: CallLifecycle;
  readonly #port: () => LegAudioPort;
  /** On nodes sharing a store: where each queue is held, and the legs to it (node-queue.ts). */
  readonly #nodes: QueueNodes | undefined;

  constructor(registry: QueueRegistry, life: CallLifecycle, port: () => LegAudioPort, nodes?: QueueNodes) {
    this.#registry = registry;
    this.#life = life;
    this.#port = port;
    this.#nodes = nodes;
  }

  #asQueueCall(): QueueCall {
    const life = this.#life;
    return {
      callId: life.row.id,
      callSid: life.row.sid,
      port: this.#port,
      emit: (code, data) => void life.emit(code, data),
    };
  }

  /** <Enqueue>: in the queue of this process, or in the one another node holds (node-queue.ts). */
  join(name: string, maxSize: number): Promise<QueueTicket> {
    const local = () => this.#registry.join(this.#life.row.account_id, name, this.#asQueueCall(), maxSize);
    if (!this.#nodes) return Promise.resolve(local());
    return this.#nodes.join({ life: this.#life, port: this.#port }, name, maxSize, local);
  }

  /**
   * <Dial><Queue>: the longest-waiting caller is bridged to this call until either hangs up (or timeLimit);
   * `no-answer` when no caller came within the Dial's timeout, `failed` when this call's audio is not ours.
   */
  dial(name: string, options: DialOptions): Promise<DialResult> {
    if (!this.#nodes) return this.#dialHere(name, options);
    return this.#nodes.dial({ life: this.#life, port: this.#port }, name, options, () => this.#dialHere(name, options));
  }

  async #dialHere(name: string, options: DialOptions): Promise<DialResult> {
    let mine: LegAudioPort;
    try {
      mine = this.#port();
    } catch {
      return { status: 'failed', durationSeconds: 0 };
    }
    const limit = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeLimit * 1000)]);
    const ms = await this.#registry.dequeueToAgent(
      this.#life.row.account_id,
      name,
      this.#life.row.id,
      async (member, memberGone) => {
        let theirs: LegAudioPort;
        try {
          theirs = member.port();
        } catch {
          return; // the caller's leg went away as it was taken: a bridge of no length
        }
        await bridgeAudio(theirs, mine, AbortSignal.any([memberGone, limit]));
      },
      { timeoutMs: options.timeout * 1000, signal: options.signal },
    );
    if (ms === undefined) return { status: 'no-answer', durationSeconds: 0 };
    return { status: 'completed', durationSeconds: Math.round(ms / 1000) };
  }
}
