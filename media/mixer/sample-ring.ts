/**
 * A participant's incoming audio between the network and the mixer's tick: a fixed ring of 16-bit samples (no
 * allocation after construction). Packets arrive on the network's clock and ticks run on ours, so the ring
 * holds a little audio as a jitter buffer: reading starts once `targetSamples` are in (two frames by default),
 * an empty ring re-primes, and a ring that has grown past `maxSamples` (the sender's clock runs faster than
 * ours, or a burst arrived) drops its oldest audio back to the target, so delay stays bounded.
 */
export interface SampleRingOptions {
  /** Power of two; the most audio the ring can hold. */
  capacity?: number;
  targetSamples?: number;
  maxSamples?: number;
}

export class SampleRing {
  readonly #buf: Int16Array;
  readonly #mask: number;
  readonly #target: number;
  readonly #max: number;
  #read = 0;
  #size = 0;
  #primed = false;
  /** Frames the mixer wanted and the ring could not give (after priming). */
  underruns = 0;
  /** Samples thrown away to keep the delay bounded. */
  dropped = 0;

  constructor(opts: SampleRingOptions = {}) {
    const capacity = opts.capacity ?? 2048;
    if ((capacity & (capacity - 1)) !== 0) throw new RangeError('capacity must be a power of two');
    this.#buf = new Int16Array(capacity);
    this.#mask = capacity - 1;
    this.#target = opts.targetSamples ?? 320;
    this.#max = Math.min(opts.maxSamples ?? 960, capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Appends encoded G.711 bytes, decoding each through `table` (media/g711.ts). */
  writeEncoded(payload: Uint8Array, table: Int16Array): void {
    const n = payload.length;
    for (let i = 0; i < n; i += 1) this.#push(table[payload[i]!]!);
    this.#bound();
  }

  writeSamples(samples: Int16Array): void {
    const n = samples.length;
    for (let i = 0; i < n; i += 1) this.#push(samples[i]!);
    this.#bound();
  }

  /** Fills `out` with the next frame; false (and `out` untouched) when not enough audio is buffered. */
  readFrame(out: Int16Array): boolean {
    const n = out.length;
    if (!this.#primed) {
      if (this.#size < Math.max(this.#target, n)) return false;
      this.#primed = true;
    }
    if (this.#size < n) {
      this.#primed = false;
      this.underruns += 1;
      return false;
    }
    const buf = this.#buf;
    const mask = this.#mask;
    let r = this.#read;
    for (let i = 0; i < n; i += 1) {
      out[i] = buf[r]!;
      r = (r + 1) & mask;
    }
    this.#read = r;
    this.#size -= n;
    return true;
  }

  clear(): void {
    this.#read = 0;
    this.#size = 0;
    this.#primed = false;
  }

  #push(sample: number): void {
    if (this.#size === this.#buf.length) {
      this.#read = (this.#read + 1) & this.#mask;
      this.#size -= 1;
      this.dropped += 1;
    }
    this.#buf[(this.#read + this.#size) & this.#mask] = sample;
    this.#size += 1;
  }

  #bound(): void {
    if (this.#size <= this.#max) return;
    const drop = this.#size - this.#target;
    this.#read = (this.#read + drop) & this.#mask;
    this.#size -= drop;
    this.dropped += drop;
  }
}
