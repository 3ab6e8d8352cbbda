/**
 * A typed event emitter whose emit survives a throwing listener (the mediasoup `safeEmit` habit): one
 * application bug must not break the stack's state machines.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from './logger.js';

type Listener<A extends unknown[]> = (...args: A) => void;

export class TypedEmitter<Events extends Record<string, unknown[]>> {
  readonly #ee = new EventEmitter();
  readonly #logger?: Logger;

  constructor(logger?: Logger) {
    this.#logger = logger;
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

  protected safeEmit<K extends keyof Events & string>(event: K, ...args: Events[K]): boolean {
    const listeners = this.#ee.listeners(event) as Listener<Events[K]>[];
    for (const l of listeners) {
      try {
        l(...args);
      } catch (err) {
        this.#logger?.error({ err, event }, 'event listener threw');
      }
    }
    return listeners.length > 0;
  }
}
