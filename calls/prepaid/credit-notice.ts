import type { Logger } from '../../config/index.js';
import { notice, noticeLanguageOf, type MediaService } from '../../media/index.js';
import { CALLER_LEG } from '../call-media.js';

/** What the credit monitor says about a call (billing's CreditWarning, the fields this needs). */
export interface CreditWarningNotice {
  secondsLeft: number;
  language: string;
}

/**
 * Plays the "one minute left" notice to the paying leg of a call, and to it only.
 *
 * The paying leg is the call's first leg, tagged `A` in its media session: the caller of a call that came in (a
 * prepaid caller on a calling-card number, a phone of the account dialling out) and the called party of a call
 * the API placed. rtpengine's `play media` with that leg's from-tag replaces what that leg hears for the length
 * of the notice; the other party of a bridge hears nothing of it (it keeps hearing the paying leg itself). A Dial
 * leg's warning is the parent call's: one notice per call, however many of its billed legs were warned. The notice
 * is the switch's own: never billed as speech.
 */
export class CreditNotices {
  readonly #warned = new Set<string>();

  constructor(private readonly d: { media: Pick<MediaService, 'say'>; log: Logger }) {}

  /** Plays the notice on call `callId` (the parent of a Dial leg), once; never throws. */
  play(callId: string, w: CreditWarningNotice, ended: Promise<unknown>): void {
    if (this.#warned.has(callId)) return;
    this.#warned.add(callId);
    void ended.finally(() => this.#warned.delete(callId));
    const n = notice('creditWarning', noticeLanguageOf(w.language), { seconds: w.secondsLeft });
    this.d.media.say(callId, CALLER_LEG, n.text, { language: n.language }).then(
      (r) => this.d.log.info({ callId, seconds: r.ttsSeconds }, 'credit warning played to the paying leg'),
      (e: unknown) => this.d.log.warn({ err: e, callId }, 'credit warning not played'),
    );
  }
}
