import { EventEmitter } from 'node:events';

/**
 * An EventEmitter whose event names and payloads are checked by an event map, as mediasoup does.
 * `safeEmit` survives a throwing listener so one bad subscriber cannot break the media room.
 */
export class TypedEmitter<Events extends Record<string, unknown[]>> {
  readonly #emitter = new EventEmitter();

  constructor() {
    this.#emitter.setMaxListeners(100);
  }

  on<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): this {
    this.#emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  once<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): this {
    this.#emitter.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): this {
    this.#emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  protected safeEmit<K extends keyof Events & string>(event: K, ...args: Events[K]): void {
    for (const listener of this.#emitter.listeners(event)) {
      try {
        (listener as (...a: unknown[]) => void)(...args);
      } catch {
        // A listener's failure is its own; the emitter keeps going.
      }
    }
  }
}
