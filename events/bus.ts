import { roomLogger, type Logger } from '../config/index.js';
import type { CallSnapshot, StreamFrame } from './envelope.js';

/** What travels on the bus: the stream frame and who may see it. */
export interface BusEvent {
  /** The event id (also the status callback's `id` and the call_events row id); not part of the stream frame. */
  id: string;
  /** The owning account; null for platform-wide events (PLATFORM.0001, SYS.0500 outside any account). */
  accountId: string | null;
  /** Only staff observers see it (PLATFORM.0001). */
  staffOnly: boolean;
  callId?: string;
  frame: StreamFrame;
  /** The call as of the event, when it concerns one (observers such as the metrics read direction and status). */
  call?: CallSnapshot;
  /** The node that published it, when another node did (events/node-relay.ts): for stream sockets only. */
  remote?: string;
}

export type BusListener = (e: BusEvent) => void;

/**
 * In-process fan-out of events to the stream (and anything else that watches). Subscribers register per account;
 * observers (the staff stream) see every account and the staff-only events. Publishing is synchronous and a
 * throwing listener is logged and skipped (mediasoup's safeEmit): one bad consumer never stops the others, nor the
 * caller that published. Other nodes' events come in through the same bus, marked `remote` (events/node-relay.ts).
 */
export class EventBus {
  readonly #byAccount = new Map<string, Set<BusListener>>();
  readonly #observers = new Set<BusListener>();
  /** Observers that also see other nodes' events (the stream): the rest (metrics, counts) see this node's only. */
  readonly #remoteObservers = new Set<BusListener>();
  readonly #log: Logger;

  constructor(logger: Logger = roomLogger('events')) {
    this.#log = logger;
  }

  publish(e: BusEvent): void {
    if (e.remote !== undefined) {
      for (const l of [...this.#remoteObservers]) this.#safeEmit(l, e);
      return;
    }
    if (!e.staffOnly && e.accountId !== null) {
      const set = this.#byAccount.get(e.accountId);
      if (set) for (const l of [...set]) this.#safeEmit(l, e);
    }
    for (const l of [...this.#observers]) this.#safeEmit(l, e);
  }

  /** Events of one account (never staff-only ones). Returns the unsubscribe function. */
  subscribe(accountId: string, listener: BusListener): () => void {
    let set = this.#byAccount.get(accountId);
    if (!set) this.#byAccount.set(accountId, (set = new Set()));
    set.add(listener);
    return () => {
      const s = this.#byAccount.get(accountId);
      if (!s) return;
      s.delete(listener);
      if (s.size === 0) this.#byAccount.delete(accountId);
    };
  }

  /**
   * Every event of every account plus the staff-only ones; with `remote`, other nodes' events too (they were
   * persisted, counted and delivered as status callbacks by the node that published them). Returns the unsubscribe.
   */
  observe(listener: BusListener, opts: { remote?: boolean } = {}): () => void {
    this.#observers.add(listener);
    if (opts.remote === true) this.#remoteObservers.add(listener);
    return () => {
      this.#observers.delete(listener);
      this.#remoteObservers.delete(listener);
    };
  }

  get listenerCount(): number {
    let n = this.#observers.size;
    for (const s of this.#byAccount.values()) n += s.size;
    return n;
  }

  #safeEmit(l: BusListener, e: BusEvent): void {
    try {
      l(e);
    } catch (err) {
      this.#log.error({ err, code: e.frame.code, eventId: e.id }, 'event listener threw; skipped');
    }
  }
}
