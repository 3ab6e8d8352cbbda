/**
 * What the queue and media-stream verbs (types-live.ts) need of the call they run on. Optional members of
 * VerbContext: a context without them (unit-test fakes, set-ups without media) ends those verbs with an error
 * result and the document goes on.
 */
import type { StreamNoun } from './types-live.js';

/** TwiML's QueueResult values Simu produces (docs/verbs.md, Enqueue). */
export type QueueResult = 'bridged' | 'hangup' | 'redirected' | 'leave' | 'queue-full' | 'error' | 'system-shutdown';

/** How a caller left a queue. */
export interface QueueOutcome {
  readonly result: QueueResult;
  /** Seconds from joining the queue to leaving it (bridged: to being taken by an agent). */
  readonly queueTimeSeconds: number;
  /** Dequeued by the REST API to this URL: its document runs next. */
  readonly redirectUrl?: string;
}

/** A caller's place in a queue while it waits (CallVerbs.joinQueue). */
export interface QueueTicket {
  /** 1 for the longest-waiting caller. */
  position(): number;
  size(): number;
  waitedSeconds(): number;
  averageWaitSeconds(): number;
  /** Aborts when the caller stops waiting (taken by an agent, dequeued, removed): the hold audio must stop. */
  readonly holdOver: AbortSignal;
  /** Settles once the caller has left the queue and any bridge it was in has ended. */
  readonly outcome: Promise<QueueOutcome>;
  /** Leaves the queue (a <Leave> in the wait document, the call ending); no effect once it has left. */
  leave(result: QueueResult): void;
}

export interface LiveVerbContext {
  /** Joins the account's queue `name`; QueueOutcome queue-full at once when it holds maxSize callers. */
  joinQueue?(name: string, options: { readonly maxSize: number }): Promise<QueueTicket>;
  /** The default hold audio, once through (about 10 s); resolves early when `signal` aborts. */
  playHold?(options: { readonly signal: AbortSignal }): Promise<void>;
  /** <Start><Stream>: forks the caller's audio to the WebSocket and returns once it is open (or failed). */
  startStream?(stream: StreamNoun): Promise<void>;
  /** <Stop><Stream>: the stream of that name (every forked stream when none) is stopped. */
  stopStream?(name: string | undefined): Promise<void>;
  /** <Connect><Stream>: both ways until the WebSocket closes or `signal` aborts; `failed`: it never opened. */
  connectStream?(stream: StreamNoun, options: { readonly signal: AbortSignal }): Promise<'closed' | 'failed'>;
}
