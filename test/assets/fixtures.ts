import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Real audio made on the spot: espeak-ng speech as WAV, and the same converted by sox to Ogg Vorbis and FLAC. */
export function makeSpeechFiles(text = 'Thank you for calling Simu. This greeting is an uploaded asset.') {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-asset-src-'));
  const wav = path.join(dir, 'greeting.wav');
  execFileSync('espeak-ng', ['-w', wav, text]);
  const ogg = path.join(dir, 'greeting.ogg');
  execFileSync('sox', [wav, ogg]);
  const flac = path.join(dir, 'greeting.flac');
  execFileSync('sox', [wav, flac]);
  const seconds = Number(execFileSync('soxi', ['-D', wav]).toString().trim());
  return { dir, wav, ogg, flac, seconds, bytes: (p: string) => readFileSync(p) };
}
