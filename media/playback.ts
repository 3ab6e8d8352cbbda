import type { Clock, TimerHandle } from '../kit/index.js';

export interface PlaybackOptions {
  signal?: AbortSignal;
  /** Called when rtpengine has started playing, with the length of the audio. */
  onStarted?: (durationMs: number) => void;
}

export interface PlaybackResult {
  durationMs: number;
  /** False when cancelled (signal, stopPlayback or hangup) before the end. */
  completed: boolean;
}

/**
 * One prompt rtpengine is playing to a leg, a child of its MediaSession. rtpengine 10.5 sends no end-of-playback
 * notice, so the file's duration (from the `play media` answer) on the session's clock is the end; the signal,
 * a newer prompt, or the session closing end it early. `finish` is safe to call more than once: the first wins.
 */
export class Playback {
  readonly durationMs: number;
  readonly done: Promise<PlaybackResult>;
  #resolve!: (r: PlaybackResult) => void;
  #finished = false;
  readonly #timer: TimerHandle;
  readonly #clock: Clock;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => this.finish(false);
  readonly #onFinish: (completed: boolean) => void;

  constructor(opts: {
    durationMs: number;
    clock: Clock;
    signal?: AbortSignal;
    /** Runs once, before `done` resolves: the session's bookkeeping (and `stop media` when cut short). */
    onFinish: (completed: boolean) => void;
  }) {
    this.durationMs = opts.durationMs;
    this.#clock = opts.clock;
    this.#signal = opts.signal;
    this.#onFinish = opts.onFinish;
    this.done = new Promise<PlaybackResult>((resolve) => (this.#resolve = resolve));
    this.#timer = this.#clock.setTimeout(() => this.finish(true), opts.durationMs);
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get finished(): boolean {
    return this.#finished;
  }

  finish(completed: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#clock.clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#onFinish(completed);
    this.#resolve({ durationMs: this.durationMs, completed });
  }
}
