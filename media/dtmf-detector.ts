/**
 * In-band DTMF: keys heard as tones in a caller's audio, for legs that negotiated no telephone-event (RFC 4733)
 * and so send their keys as sound. A Goertzel filter per DTMF frequency (ITU-T Q.23 pairs: rows 697, 770, 852,
 * 941 Hz; columns 1209, 1336, 1477, 1633 Hz) over 20 ms windows of 8 kHz audio, every 10 ms. A window holds a
 * key when (Q.24's usual acceptance rules):
 * - each tone of the pair is above MIN_TONE_AMPLITUDE;
 * - twist (column level over row level) is within +4 dB (reverse) and -8 dB (normal);
 * - each tone stands at least PEAK_RATIO above the other tones of its group;
 * - the pair carries most of the window's energy (ENERGY_RATIO), which keeps speech and noise from passing.
 * A key is reported once it has held for MIN_KEY_MS (~40 ms), and a new key (or the same again) only after
 * MIN_GAP_MS without one, as Q.24 asks of the pause between keys.
 */
import { goertzelAmplitude, goertzelCoefficient } from './goertzel.js';

const RATE = 8000;
/** Window and hop, in samples: 20 ms windows every 10 ms. */
const WINDOW = 160;
const HOP = 80;
const ROWS = [697, 770, 852, 941] as const;
const COLS = [1209, 1336, 1477, 1633] as const;
const KEYS = ['123A', '456B', '789C', '*0#D'] as const;

/** Lowest amplitude (16-bit scale) of each tone of a key: about -44 dBFS. */
export const MIN_TONE_AMPLITUDE = 200;
/** Column over row, dB: at most +4 (reverse twist), at least -8 (normal twist). */
export const MAX_REVERSE_TWIST_DB = 4;
export const MAX_NORMAL_TWIST_DB = 8;
/** Each tone's amplitude over any other of its group (6 dB). */
export const PEAK_RATIO = 2;
/** Share of the window's energy the two tones must carry. */
export const ENERGY_RATIO = 0.6;
/** A key must hold this long to count, and keys must be this far apart. */
export const MIN_KEY_MS = 40;
export const MIN_GAP_MS = 30;

export interface InbandDigit {
  readonly digit: string;
  /** Milliseconds of audio the detector had seen when the key began. */
  readonly atMs: number;
}

const ROW_COEFF = ROWS.map((f) => goertzelCoefficient(f, RATE));
const COL_COEFF = COLS.map((f) => goertzelCoefficient(f, RATE));

/** Amplitude of the `coeff` frequency in one window. */
function goertzel(x: Float64Array, coeff: number): number {
  return goertzelAmplitude(x, coeff, 0, WINDOW);
}

function strongest(amps: number[]): { index: number; dominant: boolean } {
  let index = 0;
  for (let i = 1; i < amps.length; i++) if (amps[i]! > amps[index]!) index = i;
  const dominant = amps.every((a, i) => i === index || amps[index]! >= PEAK_RATIO * a);
  return { index, dominant };
}

/** The key one window holds, or undefined. Exported for tests. */
export function keyInWindow(x: Float64Array): string | undefined {
  let energy = 0;
  for (let i = 0; i < WINDOW; i++) energy += x[i]! * x[i]!;
  const meanSquare = energy / WINDOW;
  if (meanSquare < (MIN_TONE_AMPLITUDE * MIN_TONE_AMPLITUDE) / 2) return undefined;
  const rows = ROW_COEFF.map((c) => goertzel(x, c));
  const cols = COL_COEFF.map((c) => goertzel(x, c));
  const r = strongest(rows);
  const c = strongest(cols);
  const row = rows[r.index]!;
  const col = cols[c.index]!;
  if (!r.dominant || !c.dominant || row < MIN_TONE_AMPLITUDE || col < MIN_TONE_AMPLITUDE) return undefined;
  const twistDb = 20 * Math.log10(col / row);
  if (twistDb > MAX_REVERSE_TWIST_DB || twistDb < -MAX_NORMAL_TWIST_DB) return undefined;
  if ((row * row + col * col) / 2 < ENERGY_RATIO * meanSquare) return undefined;
  return KEYS[r.index]![c.index];
}

/**
 * Feeds on a leg's decoded audio (any chunk sizes) and reports each key once. One detector per leg; not shared.
 */
export class DtmfDetector {
  readonly #buffer = new Float64Array(WINDOW);
  /** Samples in #buffer (fills to WINDOW, then slides by HOP). */
  #fill = 0;
  #samples = 0;
  #candidate: string | undefined;
  #candidateSince = 0;
  #candidateWindows = 0;
  /** The key being held (already reported), and how many windows have lacked it. */
  #held: string | undefined;
  #quietWindows = 0;
  readonly #window = new Float64Array(WINDOW);

  /** Audio in (8 kHz, 16-bit linear); returns the keys that began being reported in it. */
  push(samples: Int16Array): InbandDigit[] {
    const found: InbandDigit[] = [];
    for (let i = 0; i < samples.length; i++) {
      this.#buffer[this.#fill++] = samples[i]!;
      this.#samples++;
      if (this.#fill < WINDOW) continue;
      this.#window.set(this.#buffer);
      const key = this.#step(keyInWindow(this.#window));
      if (key) found.push(key);
      this.#buffer.copyWithin(0, HOP, WINDOW);
      this.#fill = WINDOW - HOP;
    }
    return found;
  }

  #step(key: string | undefined): InbandDigit | undefined {
    const startMs = ((this.#samples - WINDOW) * 1000) / RATE;
    if (this.#held !== undefined) {
      if (key === this.#held) {
        this.#quietWindows = 0;
        return undefined;
      }
      // The key is over once MIN_GAP_MS of windows lacked it.
      this.#quietWindows += 1;
      if (this.#quietWindows * (HOP / RATE) * 1000 < MIN_GAP_MS) return undefined;
      this.#held = undefined;
      this.#candidate = undefined;
    }
    if (key === undefined) {
      this.#candidate = undefined;
      return undefined;
    }
    if (key !== this.#candidate) {
      this.#candidate = key;
      this.#candidateSince = startMs;
      this.#candidateWindows = 1;
    } else {
      this.#candidateWindows += 1;
    }
    // k consecutive windows, HOP apart, span WINDOW + (k - 1) * HOP samples of tone.
    const heldMs = ((WINDOW + (this.#candidateWindows - 1) * HOP) * 1000) / RATE;
    if (heldMs < MIN_KEY_MS) return undefined;
    this.#held = key;
    this.#quietWindows = 0;
    return { digit: key, atMs: this.#candidateSince };
  }
}
