/**
 * The verbs of queues and streams: queues (<Enqueue>, and <Queue> as a Dial noun in types.ts) and media streams
 * (<Start><Stream>, <Stop><Stream>, <Connect><Stream>). Parsed by parse-live.ts; run by verbs/verbs/enqueue.ts and
 * verbs/verbs/stream.ts.
 */

/** Longest queue name: TwiML's friendly names are at most 64 characters. */
export const MAX_QUEUE_NAME = 64;
/** Most <Parameter> nouns one Stream carries (customParameters). */
export const MAX_STREAM_PARAMETERS = 32;

export interface EnqueueVerb {
  readonly verb: 'Enqueue';
  readonly line: number;
  /** The queue's name (one namespace per account). */
  readonly name: string;
  /**
   * What the caller hears while waiting: a document of Say/Play/Pause (requested again each time it ends, with
   * QueuePosition and QueueTime), or an audio URL played in a loop. Absent: the position spoken and hold audio.
   */
  readonly waitUrl?: string;
  /** Requested when the caller leaves the queue, with QueueResult and QueueTime; its reply runs next. */
  readonly action?: string;
  readonly method: 'POST';
  /** Most callers this queue holds; a caller beyond it leaves at once with QueueResult queue-full. */
  readonly maxSize: number;
}

export type StreamTrackName = 'inbound_track' | 'outbound_track' | 'both_tracks';

export interface StreamNoun {
  /** ws:// or wss:// URL of the customer's WebSocket server. */
  readonly url: string;
  /** The name <Stop><Stream name> uses; absent: the stream can only be stopped with the others. */
  readonly name?: string;
  readonly track: StreamTrackName;
  /** <Parameter name value/> nouns: the `start` message's customParameters. */
  readonly parameters: Readonly<Record<string, string>>;
}

/** <Start><Stream>: forks the caller's audio to a WebSocket and goes on at once with the next verb. */
export interface StartVerb {
  readonly verb: 'Start';
  readonly line: number;
  readonly stream: StreamNoun;
}

/** <Stop><Stream name?>: stops the named stream of <Start> (every one when no name is given). */
export interface StopVerb {
  readonly verb: 'Stop';
  readonly line: number;
  readonly name?: string;
}

/** <Connect><Stream>: the call's audio both ways with the WebSocket until it closes, then the next verb. */
export interface ConnectVerb {
  readonly verb: 'Connect';
  readonly line: number;
  readonly stream: StreamNoun;
  /** Requested when the stream ends; its reply runs next. */
  readonly action?: string;
  readonly method: 'POST';
}

export type LiveVerb = EnqueueVerb | StartVerb | StopVerb | ConnectVerb;
export type LiveVerbName = LiveVerb['verb'];
export const LIVE_VERB_NAMES: readonly LiveVerbName[] = ['Enqueue', 'Start', 'Stop', 'Connect'];
