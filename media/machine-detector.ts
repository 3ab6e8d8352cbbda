/**
 * Answering machine detection: who picked up a call the platform placed, from the callee's first seconds of audio
 * (8 kHz linear PCM in 20 ms frames). Asterisk's AMD() approach, without a model:
 * - each frame is silence, voice or tone: voice is energy (mean absolute amplitude) above the silence threshold and
 *   above the line's noise floor, unless its zero crossings say hiss (many crossings at low energy); tone is one
 *   sinusoid carrying most of the frame (its frequency from the zero crossings, its amplitude from Goertzel);
 * - voice runs of at least `minWordMs` are words; silence of `betweenWordsSilenceMs` ends a word;
 * - a short answer followed by silence is a person (`human`); a long greeting, many words or one endless word is a
 *   machine; silence from the start is `unknown`; a fax's calling tone (CNG, 1,100 Hz) or answer tone (CED,
 *   2,100 Hz) is `fax`;
 * - with `DetectMessageEnd`, a machine's verdict waits for the end of its greeting: a beep (a steady tone of
 *   400-2,000 Hz lasting 100-1,500 ms) ends it at the beep's end, silence of `endSilenceMs` after the voice or
 *   the time limit otherwise.
 * Missing audio (no packets) counts as silence once the clock is `MAX_AUDIO_LAG_MS` ahead of the audio heard.
 */
import { goertzelAmplitude, goertzelCoefficient } from './goertzel.js';

const RATE = 8000;
/** Samples in one 20 ms frame. */
export const AMD_FRAME_SAMPLES = 160;
const FRAME_MS = 20;

export type MachineDetectionMode = 'Enable' | 'DetectMessageEnd';

export type AnsweredBy =
  'human' | 'machine_start' | 'machine_end_beep' | 'machine_end_silence' | 'machine_end_other' | 'fax' | 'unknown';

export const ANSWERED_BY: readonly AnsweredBy[] = [
  'human',
  'machine_start',
  'machine_end_beep',
  'machine_end_silence',
  'machine_end_other',
  'fax',
  'unknown',
];

/** The detector's tuning: every threshold in one place, each a customer may set per call. */
export interface MachineDetectionParams {
  /** The longest the detector listens: then `unknown` (or `machine_end_other` once a machine was heard). */
  readonly timeoutMs: number;
  /** Silence from the start this long: `unknown` (nobody spoke). */
  readonly initialSilenceMs: number;
  /** Voice in total this long: a machine's greeting, not a person's answer. */
  readonly greetingMs: number;
  /** Silence this long after the first word, before `greetingMs` of voice: a person waiting for a reply. */
  readonly afterGreetingSilenceMs: number;
  /** DetectMessageEnd: silence this long after a machine's voice ends its greeting (`machine_end_silence`). */
  readonly endSilenceMs: number;
  /** Shortest voice run that is a word (shorter runs are clicks and breaths). */
  readonly minWordMs: number;
  /** Silence that separates two words. */
  readonly betweenWordsSilenceMs: number;
  /** This many words: a machine. */
  readonly maxWords: number;
  /** One word this long: a machine (a person pauses). */
  readonly maxWordMs: number;
  /** Mean absolute amplitude (16-bit scale) below which a frame is silence. */
  readonly silenceThreshold: number;
}

/**
 * Defaults: Asterisk's AMD (amd.conf) for the segmentation, Twilio's MachineDetectionTimeout (30 s),
 * MachineDetectionSilenceTimeout (5 s) and MachineDetectionSpeechEndThreshold (1.2 s) for the limits.
 */
export const MACHINE_DETECTION_DEFAULTS: MachineDetectionParams = {
  timeoutMs: 30_000,
  initialSilenceMs: 5000,
  greetingMs: 1500,
  afterGreetingSilenceMs: 800,
  endSilenceMs: 1200,
  minWordMs: 100,
  betweenWordsSilenceMs: 50,
  maxWords: 6,
  maxWordMs: 5000,
  silenceThreshold: 256,
};

/** Allowed range of each parameter, for validating what a customer sets. */
export const MACHINE_DETECTION_LIMITS: { readonly [K in keyof MachineDetectionParams]: readonly [number, number] } = {
  timeoutMs: [2000, 60_000],
  initialSilenceMs: [1000, 60_000],
  greetingMs: [500, 10_000],
  afterGreetingSilenceMs: [200, 5000],
  endSilenceMs: [300, 5000],
  minWordMs: [20, 1000],
  betweenWordsSilenceMs: [20, 1000],
  maxWords: [2, 20],
  maxWordMs: [500, 10_000],
  silenceThreshold: [16, 8000],
};

/** A beep is a steady tone in this band... */
export const BEEP_MIN_HZ = 400;
export const BEEP_MAX_HZ = 2000;
/** ...lasting this long. */
export const BEEP_MIN_MS = 100;
export const BEEP_MAX_MS = 1500;
/** Fax: CNG (ITU-T T.30, 1,100 Hz +-38 Hz, 0.5 s on) or CED (2,100 Hz +-15 Hz), heard for at least FAX_MIN_MS. */
export const CNG_HZ = 1100;
export const CNG_TOLERANCE_HZ = 38;
export const CED_HZ = 2100;
export const CED_TOLERANCE_HZ = 25;
export const FAX_MIN_MS = 400;
/** Share of a frame's power one sinusoid must carry for the frame to be a tone. */
export const TONE_PURITY = 0.8;
/** A tone's frames may drift this far (relative) from its first frame's frequency. */
export const TONE_DRIFT = 0.03;
/** Zero crossings per frame above which low-energy sound is hiss, not speech (voiced speech has far fewer). */
export const HISS_CROSSINGS = 70;
/** Voice stands this many times above the line's noise floor. */
export const NOISE_FLOOR_RATIO = 2.5;
/** The noise floor rises by this factor a frame towards sound within this ratio of it (about 1.6 times a second)... */
export const NOISE_FLOOR_RISE = 1.01;
export const NOISE_FLOOR_RISE_BAND = 4;
/** ...and falls by this share of the way towards quieter sound (a trough of rumble does not empty it). */
export const NOISE_FLOOR_FALL = 0.1;
/** Missing audio becomes silence once the clock is this far ahead of the audio heard (jitter allowance). */
export const MAX_AUDIO_LAG_MS = 200;
/** The segments kept for the result (the first ones: what the decision was made on). */
export const MAX_SEGMENTS = 64;

export type FrameKind = 'silence' | 'voice' | 'tone';

export interface FrameAnalysis {
  readonly kind: FrameKind;
  readonly meanAbs: number;
  readonly crossings: number;
  /** For a tone: its frequency. */
  readonly freqHz?: number;
}

export interface MachineDetectionSegment {
  readonly kind: FrameKind;
  /** Milliseconds of audio from the start of detection. */
  readonly startMs: number;
  readonly endMs: number;
  /** A tone's frequency. */
  readonly freqHz?: number;
}

export type MachineDetectionReason =
  | 'after_greeting_silence'
  | 'long_greeting'
  | 'max_words'
  | 'long_word'
  | 'beep'
  | 'end_silence'
  | 'fax_tone'
  | 'initial_silence'
  | 'timeout'
  | 'no_audio';

export interface MachineDetectionResult {
  readonly answeredBy: AnsweredBy;
  /** From the start of detection to the decision, by the injected clock. */
  readonly durationMs: number;
  /** Milliseconds of audio analysed. */
  readonly audioMs: number;
  readonly reason: MachineDetectionReason;
  readonly words: number;
  readonly voiceMs: number;
  /** Silence, voice and tone runs seen, in order (words joined across short gaps, clicks dropped). */
  readonly segments: readonly MachineDetectionSegment[];
}

/**
 * One frame's class. `noiseFloor` is the line's quiet level (mean absolute amplitude) so far. Exported for
 * tests and the bench.
 */
export function analyseFrame(x: Int16Array, silenceThreshold: number, noiseFloor = 0): FrameAnalysis {
  let sumAbs = 0;
  let sumSq = 0;
  let crossings = 0;
  let up = 0;
  let firstUp = -1;
  let lastUp = -1;
  let prev = x[0]!;
  for (let i = 0; i < x.length; i++) {
    const v = x[i]!;
    sumAbs += v < 0 ? -v : v;
    sumSq += v * v;
    if (i > 0 && prev < 0 !== v < 0) {
      crossings++;
      if (prev < 0) {
        // Upward crossing, placed between the two samples by linear interpolation.
        const at = i - 1 + -prev / (v - prev);
        if (firstUp < 0) firstUp = at;
        lastUp = at;
        up++;
      }
    }
    prev = v;
  }
  const meanAbs = sumAbs / x.length;
  if (meanAbs < silenceThreshold) return { kind: 'silence', meanAbs, crossings };
  if (up >= 3 && lastUp > firstUp) {
    const freqHz = ((up - 1) * RATE) / (lastUp - firstUp);
    if (freqHz >= BEEP_MIN_HZ * 0.9 && freqHz <= CED_HZ * 1.05) {
      const amplitude = goertzelAmplitude(x, goertzelCoefficient(freqHz, RATE));
      if ((amplitude * amplitude) / 2 >= TONE_PURITY * (sumSq / x.length)) {
        return { kind: 'tone', meanAbs, crossings, freqHz: Math.round(freqHz) };
      }
    }
  }
  if (meanAbs < NOISE_FLOOR_RATIO * noiseFloor) return { kind: 'silence', meanAbs, crossings };
  if (crossings > HISS_CROSSINGS && meanAbs < 4 * silenceThreshold) return { kind: 'silence', meanAbs, crossings };
  return { kind: 'voice', meanAbs, crossings };
}

function isFaxTone(freqHz: number): boolean {
  return Math.abs(freqHz - CNG_HZ) <= CNG_TOLERANCE_HZ || Math.abs(freqHz - CED_HZ) <= CED_TOLERANCE_HZ;
}

export interface MachineDetectorOptions {
  readonly mode: MachineDetectionMode;
  readonly params?: Partial<MachineDetectionParams>;
  /** The clock MachineDetectionDuration is read from, and that missing audio is measured against. */
  readonly clock: { now(): number };
}

/**
 * One call's detector: `push` each 20 ms frame as it arrives, `poll` on a timer (so silence without packets
 * still times out); both return the result once, when decided, and undefined before and after.
 */
export class MachineDetector {
  readonly params: MachineDetectionParams;
  readonly mode: MachineDetectionMode;
  readonly #clock: { now(): number };
  readonly #startedAt: number;
  #result: MachineDetectionResult | undefined;
  #audioMs = 0;
  #noiseFloor: number;
  // Segmentation (Asterisk's AMD variables).
  #silenceMs = 0;
  #consecutiveVoiceMs = 0;
  #voiceMs = 0;
  #words = 0;
  #inWord = false;
  #inGreeting = false;
  /** DetectMessageEnd: a machine was heard; the greeting's end is awaited. */
  #machine: MachineDetectionReason | undefined;
  // A tone being heard: its frames, kept until it is long enough to be a tone rather than a vowel.
  #tone: { freqHz: number; startMs: number; frames: FrameAnalysis[] } | undefined;
  readonly #runs: MachineDetectionSegment[] = [];
  #run: { kind: FrameKind; startMs: number; freqHz?: number } | undefined;

  constructor(options: MachineDetectorOptions) {
    this.mode = options.mode;
    this.params = { ...MACHINE_DETECTION_DEFAULTS, ...options.params };
    this.#clock = options.clock;
    this.#startedAt = options.clock.now();
    this.#noiseFloor = this.params.silenceThreshold / 2;
  }

  get result(): MachineDetectionResult | undefined {
    return this.#result;
  }

  /** One frame of the callee's audio (160 samples; other lengths are cut or padded into frames by the caller). */
  push(frame: Int16Array): MachineDetectionResult | undefined {
    if (this.#result) return undefined;
    const a = analyseFrame(frame, this.params.silenceThreshold, this.#noiseFloor);
    if (a.kind !== 'tone') {
      // The floor follows quiet stretches down and rises slowly towards sound near it; speech, far above it, does
      // not lift it.
      if (a.meanAbs < this.#noiseFloor) this.#noiseFloor += (a.meanAbs - this.#noiseFloor) * NOISE_FLOOR_FALL;
      else if (a.meanAbs < NOISE_FLOOR_RISE_BAND * this.#noiseFloor) this.#noiseFloor *= NOISE_FLOOR_RISE;
    }
    return this.#frame(a);
  }

  /** Missing audio up to the clock (less the jitter allowance) counts as silence; then the time limit. */
  poll(): MachineDetectionResult | undefined {
    if (this.#result) return undefined;
    const due = this.#clock.now() - this.#startedAt - MAX_AUDIO_LAG_MS;
    const silent: FrameAnalysis = { kind: 'silence', meanAbs: 0, crossings: 0 };
    while (this.#audioMs + FRAME_MS <= due) {
      const r = this.#frame(silent);
      if (r) return r;
    }
    return undefined;
  }

  #frame(a: FrameAnalysis): MachineDetectionResult | undefined {
    const at = this.#audioMs;
    this.#audioMs += FRAME_MS;
    const r = this.#classify(a, at);
    if (r) return r;
    if (this.#audioMs >= this.params.timeoutMs) {
      return this.#decide(this.#machine ? 'machine_end_other' : 'unknown', 'timeout');
    }
    return undefined;
  }

  #classify(a: FrameAnalysis, at: number): MachineDetectionResult | undefined {
    const tone = this.#tone;
    if (a.kind === 'tone') {
      if (tone && Math.abs(a.freqHz! - tone.freqHz) <= TONE_DRIFT * tone.freqHz) {
        tone.frames.push(a);
        return this.#toneHeld(tone);
      }
      const r = tone ? this.#toneEnded(tone) : undefined;
      if (r) return r;
      this.#tone = { freqHz: a.freqHz!, startMs: at, frames: [a] };
      return undefined;
    }
    if (tone) {
      const r = this.#toneEnded(tone);
      if (r) return r;
    }
    return this.#segment(a.kind, at);
  }

  /** A tone still sounding: a fax's tone decides at once; a beep waits for its end. */
  #toneHeld(tone: { freqHz: number; startMs: number; frames: FrameAnalysis[] }): MachineDetectionResult | undefined {
    const ms = tone.frames.length * FRAME_MS;
    if (ms >= FAX_MIN_MS && !this.#inGreeting && isFaxTone(tone.freqHz)) {
      this.#addRun('tone', tone.startMs, tone.freqHz);
      return this.#decide('fax', 'fax_tone');
    }
    return undefined;
  }

  #toneEnded(tone: { freqHz: number; startMs: number; frames: FrameAnalysis[] }): MachineDetectionResult | undefined {
    this.#tone = undefined;
    const ms = tone.frames.length * FRAME_MS;
    if (ms < BEEP_MIN_MS) {
      // Too short for a tone: a vowel, heard as voice.
      let at = tone.startMs;
      for (const _ of tone.frames) {
        const r = this.#segment('voice', at);
        if (r) return r;
        at += FRAME_MS;
      }
      return undefined;
    }
    this.#addRun('tone', tone.startMs, tone.freqHz);
    this.#closeRun(tone.startMs + ms);
    this.#run = undefined;
    const beep = ms <= BEEP_MAX_MS && tone.freqHz >= BEEP_MIN_HZ && tone.freqHz <= BEEP_MAX_HZ;
    if (beep) return this.#decide(this.mode === 'Enable' ? 'machine_start' : 'machine_end_beep', 'beep');
    // A long tone (ringback, music) is neither voice nor silence: the silence that follows is counted afresh.
    this.#silenceMs = 0;
    return undefined;
  }

  /** Asterisk's AMD step for one silence or voice frame. */
  #segment(kind: 'silence' | 'voice', at: number): MachineDetectionResult | undefined {
    const p = this.params;
    this.#addRun(kind, at);
    if (kind === 'silence') {
      this.#silenceMs += FRAME_MS;
      if (this.#silenceMs >= p.betweenWordsSilenceMs) {
        this.#inWord = false;
        this.#consecutiveVoiceMs = 0;
      }
      if (this.#machine) {
        if (this.#silenceMs >= p.endSilenceMs) return this.#decide('machine_end_silence', 'end_silence');
        return undefined;
      }
      if (!this.#inGreeting && this.#silenceMs >= p.initialSilenceMs) return this.#decide('unknown', 'initial_silence');
      if (this.#inGreeting && this.#silenceMs >= p.afterGreetingSilenceMs) {
        return this.#decide('human', 'after_greeting_silence');
      }
      return undefined;
    }
    this.#consecutiveVoiceMs += FRAME_MS;
    this.#voiceMs += FRAME_MS;
    if (this.#consecutiveVoiceMs >= p.minWordMs) {
      if (!this.#inWord) {
        this.#words += 1;
        this.#inWord = true;
      }
      this.#silenceMs = 0;
      this.#inGreeting = true;
    }
    if (this.#machine) return undefined;
    if (this.#consecutiveVoiceMs >= p.maxWordMs) return this.#machineHeard('long_word');
    if (this.#words >= p.maxWords) return this.#machineHeard('max_words');
    if (this.#inGreeting && this.#voiceMs >= p.greetingMs) return this.#machineHeard('long_greeting');
    return undefined;
  }

  /** Enable decides a machine at once; DetectMessageEnd waits for the greeting's end. */
  #machineHeard(reason: MachineDetectionReason): MachineDetectionResult | undefined {
    if (this.mode === 'Enable') return this.#decide('machine_start', reason);
    this.#machine = reason;
    return undefined;
  }

  #addRun(kind: FrameKind, at: number, freqHz?: number): void {
    const run = this.#run;
    if (run && run.kind === kind && run.freqHz === freqHz && kind !== 'tone') return;
    if (run) this.#closeRun(at);
    this.#run = freqHz === undefined ? { kind, startMs: at } : { kind, startMs: at, freqHz };
  }

  #closeRun(endMs: number): void {
    const run = this.#run;
    if (!run || this.#runs.length >= MAX_SEGMENTS * 4) return;
    this.#runs.push({ ...run, endMs });
  }

  #decide(answeredBy: AnsweredBy, reason: MachineDetectionReason): MachineDetectionResult {
    this.#closeRun(this.#audioMs);
    this.#run = undefined;
    this.#tone = undefined;
    const result: MachineDetectionResult = {
      answeredBy,
      durationMs: Math.max(0, Math.round(this.#clock.now() - this.#startedAt)),
      audioMs: this.#audioMs,
      reason,
      words: this.#words,
      voiceMs: this.#voiceMs,
      segments: joinSegments(this.#runs, this.params),
    };
    this.#result = result;
    return result;
  }
}

/**
 * Words as a customer would read them: voice runs shorter than `minWordMs` become silence, silences shorter than
 * `betweenWordsSilenceMs` between voice become voice, neighbours of one kind merge.
 */
export function joinSegments(
  runs: readonly MachineDetectionSegment[],
  p: Pick<MachineDetectionParams, 'minWordMs' | 'betweenWordsSilenceMs'>,
): MachineDetectionSegment[] {
  const relabelled = runs.map((r, i) => {
    const ms = r.endMs - r.startMs;
    if (r.kind === 'voice' && ms < p.minWordMs) return { ...r, kind: 'silence' as const };
    if (
      r.kind === 'silence' &&
      ms < p.betweenWordsSilenceMs &&
      runs[i - 1]?.kind === 'voice' &&
      runs[i + 1]?.kind === 'voice'
    ) {
      return { ...r, kind: 'voice' as const };
    }
    return r;
  });
  const out: MachineDetectionSegment[] = [];
  for (const r of relabelled) {
    const last = out[out.length - 1];
    if (last && last.kind === r.kind && r.kind !== 'tone') {
      out[out.length - 1] = { ...last, endMs: r.endMs };
    } else if (out.length < MAX_SEGMENTS) {
      out.push(r);
    }
  }
  return out;
}
