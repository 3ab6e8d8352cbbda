import { MediaError, SpeechRecognizer, type MediaService, type SpeechModel } from '../media/index.js';
import type { SpeechInput, SpeechRecognition } from './speech-input.js';
import { CALLER_LEG } from './call-media.js';

/** At most this many recognitions at once on this process (two pocketsphinx processes each); more hear nothing. */
export const MAX_CONCURRENT_RECOGNITIONS = 16;
/** The longest one utterance is listened to, seconds. */
export const MAX_UTTERANCE_SECONDS = 15;

/**
 * SpeechInput (calls/speech-input.ts) over the media room's recogniser (media/speech/recognizer.ts): the caller's
 * audio as our IVR endpoint receives it (8 kHz) goes to a recognition for the Gather's hints, until it answers,
 * the Gather stops listening (signal) or MAX_UTTERANCE_SECONDS pass. Its processes are killed in every case.
 * A caller whose media is not the platform's (a Dial bridge) or a box already running MAX_CONCURRENT_RECOGNITIONS
 * hears nothing: null, as for silence.
 */
export class CallSpeech implements SpeechInput {
  readonly #media: Pick<MediaService, 'tapAudio'>;
  readonly #model: SpeechModel | undefined;
  #active = 0;

  constructor(media: Pick<MediaService, 'tapAudio'>, model?: SpeechModel) {
    this.#media = media;
    this.#model = model;
  }

  get active(): number {
    return this.#active;
  }

  async recognise(
    callId: string,
    options: {
      readonly hints: readonly string[];
      readonly signal: AbortSignal;
      readonly onSpeechStart?: () => void;
      readonly onListening?: () => void;
    },
  ): Promise<SpeechRecognition | null> {
    if (options.signal.aborted || this.#active >= MAX_CONCURRENT_RECOGNITIONS) return null;
    this.#active += 1;
    let recognizer: SpeechRecognizer | undefined;
    let untap: (() => void) | undefined;
    const stop = (): void => recognizer?.close();
    options.signal.addEventListener('abort', stop, { once: true });
    try {
      // The caller is heard from now: opening the recogniser (its dictionary read, the decoders started) takes a
      // moment, seconds on a cold or busy box, and a caller who answers at once spoke into it (the word was lost
      // and the Gather ended empty). What arrives meanwhile is kept, up to the utterance's limit, and handed over.
      const early: Int16Array[] = [];
      let earlySamples = 0;
      let open: SpeechRecognizer | undefined = undefined;
      untap = this.#media.tapAudio(callId, CALLER_LEG, (samples) => {
        if (open) open.push(samples, 8000);
        else if (earlySamples < MAX_UTTERANCE_SECONDS * 8000) {
          early.push(samples.slice());
          earlySamples += samples.length;
        }
      });
      recognizer = await SpeechRecognizer.open({
        hints: options.hints,
        maxSeconds: MAX_UTTERANCE_SECONDS,
        ...(this.#model ? { model: this.#model } : {}),
        ...(options.onSpeechStart ? { onSpeechStart: options.onSpeechStart } : {}),
      });
      if (options.signal.aborted) return null;
      const r = recognizer;
      for (const samples of early) r.push(samples, 8000);
      early.length = 0;
      open = r;
      options.onListening?.();
      const result = await r.result;
      return result === null ? null : { text: result.transcript, confidence: result.confidence };
    } catch (e) {
      if (e instanceof MediaError) return null; // no IVR leg to listen to (ended, or bridged by a Dial)
      throw e;
    } finally {
      untap?.();
      recognizer?.close();
      options.signal.removeEventListener('abort', stop);
      this.#active -= 1;
    }
  }
}
