/** Test helpers for proving which tones a stretch of audio holds (Goertzel, one frequency at a time). */
import { goertzelAmplitude, goertzelCoefficient } from '../../media/goertzel.js';

/** Amplitude of `freq` in `samples` (a sine of amplitude A gives about A), over the whole block. */
export function toneAmplitude(samples: Int16Array, freq: number, rate = 8000): number {
  return goertzelAmplitude(samples, goertzelCoefficient(freq, rate));
}

/**
 * Seconds of `samples` in which `freq` is heard at `minAmplitude` or more, judged 50 ms at a time. A recording made
 * of packets carries phase jumps (a late or lost packet, a restarted tone): one Goertzel over many seconds lets
 * them cancel the tone out, a short block does not see them.
 */
export function toneSeconds(samples: Int16Array, freq: number, minAmplitude: number, rate = 8000): number {
  const block = Math.round(rate / 20);
  let heard = 0;
  for (let i = 0; i + block <= samples.length; i += block)
    if (toneAmplitude(samples.subarray(i, i + block), freq, rate) >= minAmplitude) heard++;
  return heard / 20;
}

/** A sine of `freq` Hz, `seconds` long, at `amplitude` (full scale 32767), starting at sample `offset`. */
export function sine(freq: number, seconds: number, amplitude = 6000, rate = 8000, offset = 0): Int16Array {
  const out = new Int16Array(Math.round(seconds * rate));
  for (let i = 0; i < out.length; i += 1) {
    out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * freq * (i + offset)) / rate));
  }
  return out;
}
