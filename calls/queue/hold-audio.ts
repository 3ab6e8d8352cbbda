import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeWav } from '../../media/index.js';

/** Seconds of the default hold audio; it is played again and again while a caller waits. */
export const HOLD_AUDIO_SECONDS = 10;
const RATE = 8000;
/** A slow arpeggio (C4 E4 G4 C5 G4 E4), half a second a note with soft edges: audibly music, not a tone. */
const NOTES_HZ = [261.63, 329.63, 392.0, 523.25, 392.0, 329.63];

/** 16-bit samples of the hold audio, made here rather than shipped: no file of unknown licence. */
export function holdAudioSamples(): Int16Array {
  const samples = new Int16Array(HOLD_AUDIO_SECONDS * RATE);
  const note = RATE / 2;
  for (let i = 0; i < samples.length; i++) {
    const n = Math.floor(i / note);
    const t = (i % note) / RATE;
    const f = NOTES_HZ[n % NOTES_HZ.length]!;
    const envelope = Math.min(1, t / 0.05) * Math.min(1, (0.5 - t) / 0.1);
    const v = Math.sin(2 * Math.PI * f * t) * 0.7 + Math.sin(2 * Math.PI * f * 2 * t) * 0.2;
    samples[i] = Math.round(v * envelope * 7000);
  }
  return samples;
}

let made: Promise<string> | undefined;

/** The hold audio as an 8 kHz WAV under `dir` (made once per process). */
export function holdAudioFile(dir: string = path.join(os.tmpdir(), 'simu-hold')): Promise<string> {
  made ??= (async () => {
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'hold-8k.wav');
    await writeWav(file, { sampleRate: RATE, channels: 1, samples: holdAudioSamples() });
    return file;
  })();
  return made;
}
