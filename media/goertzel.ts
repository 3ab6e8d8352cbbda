/**
 * The Goertzel filter: the amplitude of one frequency in a block of samples, the single DFT bin a tone detector
 * needs (in-band DTMF, answering machine beeps, fax tones) without a whole FFT.
 */

/** The filter's coefficient for `freq` at `rate`: compute once per frequency, reuse for every block. */
export function goertzelCoefficient(freq: number, rate = 8000): number {
  return 2 * Math.cos((2 * Math.PI * freq) / rate);
}

/**
 * Amplitude of the `coeff` frequency in x[from, from + n): 2|X(f)|/n, so a sine of amplitude A gives about A.
 * The frequency need not fall on a DFT bin.
 */
export function goertzelAmplitude(x: ArrayLike<number>, coeff: number, from = 0, n = x.length - from): number {
  if (n <= 0) return 0;
  let s1 = 0;
  let s2 = 0;
  const end = from + n;
  for (let i = from; i < end; i++) {
    const s0 = x[i]! + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
  return (2 * Math.sqrt(Math.max(0, power))) / n;
}
