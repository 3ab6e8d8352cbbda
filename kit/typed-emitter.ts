/**
 * The one typed event emitter (mediasoup's habit): event names and payloads are checked against an event map, and
 * `safeEmit` survives a throwing listener, so one subscriber's bug cannot break a state machine (a SIP dialog, the
 * media service). A throwing listener is never swallowed silently: it is logged, through the logger the owner
 * injects, else through the kit's root logger (room `kit`).
 */
import { EventEmitter } from 'node:events';
import { roomLogger } from './logger.js';

/** The part of a logger the emitter uses; any pino logger fits. */
export interface ListenerErrorLog {
  error(obj: object, msg?: string): void;
}

type Listener<A extends unknown[]> = (...args: A) => void;

export class TypedEmitter<Events extends Record<string, unknown[]>> {
  readonly #ee = new EventEmitter();
  readonly #log: ListenerErrorLog | undefined;

  constructor(logger?: ListenerErrorLog) {
    this.#log = logger;
    // Several parts of a call may watch one media service or dialog; Node's default of 10 warns too early.
    this.#ee.setMaxListeners(100);
  }

  on<K extends keyof Events & string>(event: K, listener: Listener<Events[K]>): this {
    this.#ee.on(event, listener as Listener<unknown[]>);
    return this;
  }

  once<K extends keyof Events & string>(event: K, listener: Listener<Events[K]>): this {
    this.#ee.once(event, listener as Listener<unknown[]>);
    return this;
  }

  off<K extends keyof Events & string>(event: K, listener: Listener<Events[K]>): this {
    this.#ee.off(event, listener as Listener<unknown[]>);
    return this;
  }

  listenerCount<K extends keyof Events & string>(event: K): number {
    return this.#ee.listenerCount(event);
  }

  /** Calls every listener of `event` in order; one that throws is logged and the rest still run. */
  protected safeEmit<K extends keyof Events & string>(event: K, ...args: Events[K]): boolean {
    // rawListeners, not listeners: a `once` listener's wrapper removes it before calling it (with `listeners` the
    // wrapper is bypassed and a once listener stayed registered, as it did in both emitters this one replaces).
    const listeners = this.#ee.rawListeners(event) as Listener<Events[K]>[];
    for (const listener of listeners) {
      try {
        listener(...args);
      } catch (err) {
        // The root logger is asked at the moment of failure, so a logger a test or the switch put in place counts.
        (this.#log ?? roomLogger('kit')).error({ err, event }, 'event listener threw');
      }
    }
    return listeners.length > 0;
  }
}
