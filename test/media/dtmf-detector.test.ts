import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DtmfDetector } from '../../media/dtmf-detector.js';
import { decodeG711 } from '../../media/g711.js';

/** Rows and columns of each key (ITU-T Q.23). */
const PAIRS: Record<string, [number, number]> = {};
'123A456B789C*0#D'
  .split('')
  .forEach((k, i) => (PAIRS[k] = [[697, 770, 852, 941][i >> 2]!, [1209, 1336, 1477, 1633][i % 4]!]));

let dir: string;

/** sox: one key's tone, `ms` long, each tone at `rowDb`/`colDb` dBFS, as an 8 kHz WAV; then `gapMs` of silence. */
function keyWav(key: string, o: { ms?: number; gapMs?: number; rowDb?: number; colDb?: number } = {}): string {
  const [row, col] = PAIRS[key]!;
  const file = path.join(dir, `${key === '*' ? 'star' : key === '#' ? 'pound' : key}-${Math.random()}.wav`);
  const s = (o.ms ?? 100) / 1000;
  // Two sine generators (two channels) mixed into one by remix, each at its level (sox's sine is full scale).
  execFileSync('sox', [
    '-n',
    '-r',
    '8000',
    '-c',
    '1',
    '-b',
    '16',
    file,
    'synth',
    String(s),
    'sine',
    String(row),
    'sine',
    String(col),
    'remix',
    `1v${dbToAmp(o.rowDb ?? -10)},2v${dbToAmp(o.colDb ?? -10)}`,
    'pad',
    '0',
    String((o.gapMs ?? 100) / 1000),
  ]);
  return file;
}

function dbToAmp(db: number): string {
  return (10 ** (db / 20)).toFixed(4);
}

/** Concatenates WAVs and, when asked, mixes in white noise at `noiseDb` dBFS; returned as mu-law, decoded. */
function audioOf(files: string[], noiseDb?: number): Int16Array {
  const joined = path.join(dir, `joined-${Math.random()}.wav`);
  execFileSync('sox', [...files, joined]);
  let input = joined;
  if (noiseDb !== undefined) {
    const noise = path.join(dir, `noise-${Math.random()}.wav`);
    const seconds = execFileSync('soxi', ['-D', joined]).toString().trim();
    // -R: sox seeds its noise the same every run, so the test hears the same noise each time.
    execFileSync('sox', [
      '-R',
      '-n',
      '-r',
      '8000',
      '-c',
      '1',
      '-b',
      '16',
      noise,
      'synth',
      seconds,
      'whitenoise',
      'gain',
      String(noiseDb),
    ]);
    input = path.join(dir, `noisy-${Math.random()}.wav`);
    execFileSync('sox', ['-m', joined, noise, input]);
  }
  // Through G.711 mu-law, as the IVR endpoint hears a caller.
  return decodeG711(execFileSync('sox', [input, '-t', 'ul', '-r', '8000', '-c', '1', '-']), 0);
}

/** Runs the detector over `samples` in 20 ms packets, as they arrive from RTP. */
function detect(samples: Int16Array): string {
  const d = new DtmfDetector();
  let keys = '';
  for (let i = 0; i < samples.length; i += 160) for (const k of d.push(samples.subarray(i, i + 160))) keys += k.digit;
  return keys;
}

describe('media/dtmf-detector: in-band DTMF (Goertzel) on sox-generated tones', function () {
  this.timeout(30000);
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'simu-dtmf-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('hears each of the 16 keys once, in order', () => {
    const keys = '123A456B789C*0#D';
    assert.equal(detect(audioOf(keys.split('').map((k) => keyWav(k)))), keys);
  });

  it('hears a key pressed twice as two keys (the gap between them ends the first)', () => {
    assert.equal(detect(audioOf([keyWav('5', { gapMs: 60 }), keyWav('5', { gapMs: 60 }), keyWav('1')])), '551');
  });

  it('hears keys through white noise about 15 dB below the tones', () => {
    assert.equal(
      detect(
        audioOf(
          '2580'.split('').map((k) => keyWav(k)),
          -25,
        ),
      ),
      '2580',
    );
  });

  it('accepts twist inside +4/-8 dB and refuses it outside', () => {
    assert.equal(detect(audioOf([keyWav('7', { rowDb: -10, colDb: -7 })])), '7', 'reverse twist +3 dB');
    assert.equal(detect(audioOf([keyWav('7', { rowDb: -6, colDb: -13 })])), '7', 'normal twist -7 dB');
    assert.equal(detect(audioOf([keyWav('7', { rowDb: -12, colDb: -6 })])), '', 'reverse twist +6 dB');
    assert.equal(detect(audioOf([keyWav('7', { rowDb: -4, colDb: -15 })])), '', 'normal twist -11 dB');
  });

  it('needs about 40 ms of tone: 25 ms is not a key, 50 ms is', () => {
    assert.equal(detect(audioOf([keyWav('9', { ms: 25 })])), '');
    assert.equal(detect(audioOf([keyWav('9', { ms: 50 })])), '9');
  });

  it('hears no keys in speech or in noise alone', () => {
    const speech = path.join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-w', speech, 'Press one for sales, two for support, or stay on the line.']);
    const speech8k = path.join(dir, 'speech-8k.wav');
    execFileSync('sox', [speech, '-r', '8000', '-c', '1', '-b', '16', speech8k]);
    assert.equal(detect(audioOf([speech8k])), '');
    const noise = path.join(dir, 'noise.wav');
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', noise, 'synth', '2', 'whitenoise', 'gain', '-10']);
    assert.equal(detect(audioOf([noise])), '');
  });
});
