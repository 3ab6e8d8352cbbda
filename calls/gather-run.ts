import type { Clock, TimerHandle } from '../kit/index.js';
import { MAX_GATHER_DIGITS, type GatherEnd, type GatherOptions, type GatherResult } from '../verbs/index.js';
import type { CallDigit } from './call-digits.js';
import type { SpeechInput, SpeechRecognition } from './speech-input.js';

export interface GatherRunDeps {
  readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** The call's keys, every source, de-duplicated (CallDigits.listen). */
  listen(fn: (d: CallDigit) => void): () => void;
  /** The recogniser (absent until one is configured) and this call's id for it. */
  readonly speech?: SpeechInput;
  readonly callId: string;
}

/**
 * Runs one Gather on a call: listens from the start (a key pressed during the prompts counts and barges in on
 * them), plays the prompts, then waits. Ends at numDigits keys, at the finishOnKey key, `timeoutSeconds` after
 * the prompts or after the last key, when speech is recognised, or when `signal` aborts (the call ends).
 */
/** How much longer than its timeout a speech Gather waits for its recogniser to open, at most. */
const OPEN_GRACE_MS = 10_000;

export async function runGather(deps: GatherRunDeps, options: GatherOptions): Promise<GatherResult> {
  const bargeIn = new AbortController();
  const stopSpeech = new AbortController();
  let digits = '';
  let speech: SpeechRecognition | undefined;
  let promptsDone = false;
  let timer: TimerHandle | undefined;
  let finish!: (end: GatherEnd) => void;
  const ended = new Promise<GatherEnd>((resolve) => {
    let done = false;
    finish = (end) => {
      if (done) return;
      done = true;
      resolve(end);
    };
  });
  const speechOn = options.speech && deps.speech !== undefined;
  // With speech, the no-input timeout counts from when the recogniser hears (opening it takes seconds on a busy
  // box, and the caller's words meanwhile are kept for it), at most OPEN_GRACE_MS later than without; and it stops
  // once the caller has started speaking: the recognition then ends the Gather (TwiML's timeout is for silence).
  let listening = !speechOn;
  let speaking = false;
  const restartTimer = (): void => {
    if (timer !== undefined) deps.clock.clearTimeout(timer);
    timer = undefined;
    if (speaking) return;
    const ms = options.timeoutSeconds * 1000 + (listening ? 0 : OPEN_GRACE_MS);
    timer = deps.clock.setTimeout(() => finish('timeout'), ms);
  };

  const onDigit = ({ digit }: CallDigit): void => {
    if (!options.dtmf) return;
    bargeIn.abort();
    if (options.finishOnKey !== '' && digit === options.finishOnKey) return finish('finish_key');
    digits += digit;
    const enough = Math.min(options.numDigits ?? MAX_GATHER_DIGITS, MAX_GATHER_DIGITS);
    if (digits.length >= enough) return finish('num_digits');
    if (promptsDone) restartTimer();
  };
  const unlisten = deps.listen(onDigit);
  options.onListening?.();
  const onAbort = (): void => finish('stopped');
  options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.signal.aborted) finish('stopped');

  if (speechOn) {
    const heardNothing = (): void => {
      // A recogniser that failed, or heard nothing it knows: the keys and the timeout still end the Gather.
      const spoke = speaking;
      speaking = false;
      listening = true;
      if (spoke && !options.dtmf) finish('timeout');
      else if (promptsDone) restartTimer();
    };
    deps
      .speech!.recognise(deps.callId, {
        hints: options.hints,
        signal: AbortSignal.any([options.signal, stopSpeech.signal]),
        onSpeechStart: () => {
          bargeIn.abort();
          speaking = true;
          if (timer !== undefined) deps.clock.clearTimeout(timer);
          timer = undefined;
        },
        onListening: () => {
          listening = true;
          if (promptsDone) restartTimer();
        },
      })
      .then((r) => {
        if (r === null || r.text.trim() === '') return heardNothing();
        speech = r;
        finish('speech');
      }, heardNothing);
  }

  try {
    await Promise.race([options.prompts(bargeIn.signal), ended]);
    promptsDone = true;
    // After the prompts (played, or cut short by a key): wait `timeout` from now, or from the last key.
    restartTimer();
    const end = await ended;
    // Keys typed after speech was recognised, or speech after the keys ended it, are not mixed in.
    return {
      digits: end === 'speech' ? '' : digits,
      ...(end === 'speech' && speech ? { speech } : {}),
      end,
    };
  } finally {
    bargeIn.abort();
    stopSpeech.abort();
    unlisten();
    options.signal.removeEventListener('abort', onAbort);
    if (timer !== undefined) deps.clock.clearTimeout(timer);
  }
}
