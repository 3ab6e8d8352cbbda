/**
 * What a Gather with `input="speech"` needs from a speech recogniser. Declared here (the calls room uses it) and
 * implemented below by the media room's recogniser, wired in by the call engine. Without one,
 * a speech-only Gather hears nothing: it plays its prompts, waits its timeout and ends empty (docs/verbs.md).
 */
export interface SpeechInput {
  /**
   * Listens to the caller of `callId` (its IVR leg) for one utterance, constrained to `hints` when there are any.
   * Resolves with what was recognised, or null when nothing was (silence, noise, the signal aborted). Calls
   * `onSpeechStart` once when the caller starts speaking, so the Gather can barge in on its prompt. Must settle
   * promptly when `signal` aborts; never rejects for "nothing heard".
   */
  recognise(
    callId: string,
    options: {
      readonly hints: readonly string[];
      readonly language?: string;
      readonly signal: AbortSignal;
      readonly onSpeechStart?: () => void;
      /**
       * Called once the recogniser hears: open, and given what the caller said while it opened. The Gather's
       * no-input timeout counts from then (opening takes seconds on a cold or busy box).
       */
      readonly onListening?: () => void;
    },
  ): Promise<SpeechRecognition | null>;
}

export interface SpeechRecognition {
  readonly text: string;
  /** 0..1, the recogniser's own measure. */
  readonly confidence: number;
}
