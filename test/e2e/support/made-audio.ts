import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Audio made for a test in `dir`, as 8 kHz mono 16-bit WAV files (paths returned): sox for tones, silence and joins,
 * espeak-ng for speech. Every argument is the test's own, never a customer's.
 */
export class MadeAudio {
  static readonly #SYNTH = ['-r', '8000', '-c', '1', '-n'];

  constructor(private readonly dir: string) {}

  /** sox: `inputs` (files, or a synth's `-n`) through `effects`, written as `name`. */
  sox(name: string, inputs: string[], effects: string[] = []): string {
    const out = path.join(this.dir, `${name}.wav`);
    execFileSync('sox', ['-V1', '-R', ...inputs, '-r', '8000', '-c', '1', '-b', '16', out, ...effects]);
    return out;
  }

  silence(name: string, seconds: number): string {
    return this.sox(name, MadeAudio.#SYNTH, ['trim', '0', String(seconds)]);
  }

  tone(name: string, hz: number, seconds: number): string {
    return this.sox(name, MadeAudio.#SYNTH, ['synth', String(seconds), 'sine', String(hz), 'vol', '0.3']);
  }

  /** espeak-ng speech without its leading and trailing silence, cut or padded to `seconds` if given. */
  speech(name: string, text: string, seconds?: number): string {
    const raw = path.join(this.dir, `${name}-espeak.wav`);
    execFileSync('espeak-ng', ['-w', raw, text]);
    const trim = ['silence', '1', '0.02', '1%', 'reverse', 'silence', '1', '0.02', '1%', 'reverse'];
    const fit = seconds === undefined ? [] : ['pad', '0', String(seconds), 'trim', '0', String(seconds)];
    return this.sox(name, [raw], [...trim, ...fit]);
  }
}
