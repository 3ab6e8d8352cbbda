import type { Clock } from '../kit/index.js';

/**
 * Where a key came from: an RFC 4733 event read by the call's IVR endpoint as it starts (`rtp-event`), rtpengine's
 * DTMF log of the same events when they end (`rfc4733-log`), a SIP INFO, or tones detected in the caller's audio.
 */
export type DigitSource = 'rtp-event' | 'rfc4733-log' | 'sip-info' | 'inband';

/** A key accepted for the call (after de-duplication). */
export interface CallDigit {
  readonly digit: string;
  readonly source: DigitSource;
  /** When it was accepted, on the call's clock. */
  readonly at: number;
}

/**
 * Slack added to a key's duration when deciding that the same key from another source is the same press: the
 * sources report at different moments of one press (our endpoint at its first packet, the tone detector after
 * ~40 ms, rtpengine's log at its end, an INFO whenever the phone sends it).
 */
export const DUPLICATE_SLACK_MS = 250;
/** The duration assumed for a key whose source gives none. */
export const DEFAULT_KEY_MS = 160;
/** Accepted keys remembered for matching; older ones cannot be matched (a window is well under a second). */
const HISTORY = 8;

interface Accepted {
  readonly digit: string;
  readonly at: number;
  readonly durationMs: number;
  /** The sources that reported this press (the first, and every duplicate dropped). */
  readonly sources: Set<DigitSource>;
}

/**
 * The caller's keys, from every source, as one stream. A phone may send one press two ways (RFC 4733 and SIP
 * INFO, or RFC 4733 with the tone still audible), and our endpoint and rtpengine both report RFC 4733: the same
 * key from a source that has not yet reported a recent press of it, within the press's duration plus
 * DUPLICATE_SLACK_MS, is that press again and dropped. The same key twice from one source is two presses (a
 * caller typing "11").
 */
export class CallDigits {
  readonly #clock: Pick<Clock, 'now'>;
  readonly #listeners = new Set<(d: CallDigit) => void>();
  readonly #recent: Accepted[] = [];

  constructor(clock: Pick<Clock, 'now'>) {
    this.#clock = clock;
  }

  /** A key from `source`; returns false when it was another report of a press already accepted, and dropped. */
  press(digit: string, source: DigitSource, durationMs = 0): boolean {
    const now = this.#clock.now();
    const same = this.#recent.find((a) => {
      const window = Math.max(durationMs, a.durationMs, DEFAULT_KEY_MS) + DUPLICATE_SLACK_MS;
      return a.digit === digit && !a.sources.has(source) && now - a.at <= window;
    });
    if (same) {
      same.sources.add(source);
      return false;
    }
    this.#recent.push({ digit, at: now, durationMs, sources: new Set([source]) });
    if (this.#recent.length > HISTORY) this.#recent.shift();
    const accepted: CallDigit = { digit, source, at: now };
    for (const fn of [...this.#listeners]) fn(accepted);
    return true;
  }

  /** Calls `fn` for every accepted key until the returned function is called. */
  listen(fn: (d: CallDigit) => void): () => void {
    this.#listeners.add(fn);
    return () => void this.#listeners.delete(fn);
  }
}
