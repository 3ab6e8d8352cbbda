import { open, type FileHandle } from 'node:fs/promises';

const RATE = 8000;
/** One second of 8 kHz mono 16-bit: the mix is written to disk a second at a time. */
const CHUNK = RATE;

/**
 * Records a conference's whole mix (ConferenceMixer.onMix, 20 ms at a time) into an 8 kHz mono 16-bit WAV,
 * streamed to disk a second at a time so a long conference never sits in memory. The header's sizes are
 * written when it ends. `take` copies into a buffer made once per second: the tick itself allocates nothing.
 */
export class MixRecorder {
  readonly path: string;
  #file: Promise<FileHandle>;
  #chunk = new Int16Array(CHUNK);
  #fill = 0;
  #samples = 0;
  #writes: Promise<unknown> = Promise.resolve();
  #offset = 44;
  #done = false;

  constructor(path: string) {
    this.path = path;
    this.#file = open(path, 'w');
    this.#file.catch(() => undefined);
  }

  take(mix: Int16Array): void {
    if (this.#done) return;
    let from = 0;
    while (from < mix.length) {
      const n = Math.min(mix.length - from, CHUNK - this.#fill);
      this.#chunk.set(mix.subarray(from, from + n), this.#fill);
      this.#fill += n;
      from += n;
      if (this.#fill === CHUNK) this.#flush();
    }
  }

  #flush(): void {
    if (this.#fill === 0) return;
    const bytes = Buffer.from(this.#chunk.buffer, 0, this.#fill * 2);
    const at = this.#offset;
    this.#offset += bytes.length;
    this.#samples += this.#fill;
    this.#chunk = new Int16Array(CHUNK);
    this.#fill = 0;
    this.#writes = this.#writes.then(async () => (await this.#file).write(bytes, 0, bytes.length, at));
  }

  /** Writes what is left and the header; the WAV's duration and size. */
  async finish(): Promise<{ path: string; durationSec: number; sizeBytes: number }> {
    this.#done = true;
    this.#flush();
    await this.#writes;
    const file = await this.#file;
    const dataBytes = this.#samples * 2;
    const h = Buffer.alloc(44);
    h.write('RIFF', 0, 'ascii');
    h.writeUInt32LE(36 + dataBytes, 4);
    h.write('WAVEfmt ', 8, 'ascii');
    h.writeUInt32LE(16, 16);
    h.writeUInt16LE(1, 20); // PCM
    h.writeUInt16LE(1, 22); // mono
    h.writeUInt32LE(RATE, 24);
    h.writeUInt32LE(RATE * 2, 28);
    h.writeUInt16LE(2, 32);
    h.writeUInt16LE(16, 34);
    h.write('data', 36, 'ascii');
    h.writeUInt32LE(dataBytes, 40);
    await file.write(h, 0, 44, 0);
    await file.close();
    return { path: this.path, durationSec: this.#samples / RATE, sizeBytes: 44 + dataBytes };
  }
}
