import { systemClock, type Clock, type Periodic } from './clock.js';

/**
 * A background job (a sweep, a roll-up) run once at start and then every `everyMs` on the clock, never twice at
 * once: a run asked for while one is under way joins it. A failed run is reported to `onError` and the next one
 * goes ahead. `close()` stops it and waits for a run in progress; it is safe to call twice.
 */
export class PeriodicJob<T> {
  readonly #run: () => Promise<T>;
  #running: Promise<T> | undefined;
  #periodic: Periodic | undefined;

  constructor(run: () => Promise<T>) {
    this.#run = run;
  }

  start(o: { everyMs: number; onError: (e: unknown) => void; clock?: Pick<Clock, 'every'>; name?: string }): void {
    const tick = () => void this.runOnce().catch(o.onError);
    tick();
    this.#periodic = (o.clock ?? systemClock).every(o.everyMs, tick, o.name);
  }

  /** One run now, or the one under way. */
  runOnce(): Promise<T> {
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async close(): Promise<void> {
    this.#periodic?.cancel();
    await this.#running?.catch(() => undefined);
  }
}
