/**
 * The answering machine detector's accuracy over generated calls: people answering and machines greeting in
 * espeak-ng's voices at different speeds, levels and pauses, beeps and fax tones and line noise from sox, all made
 * at run time and passed through G.711 mu-law as a phone line would. Prints the table and holds a floor on it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '../../kit/clock.js';
import { decodeG711, encodeG711 } from '../../media/g711.js';
import {
  AMD_FRAME_SAMPLES,
  MachineDetector,
  type AnsweredBy,
  type MachineDetectionMode,
  type MachineDetectionResult,
} from '../../media/machine-detector.js';

/** The share of cases that must be decided right. */
const ACCURACY_FLOOR = 0.9;

const VOICES = ['en-us', 'en-gb', 'en-us+f3', 'en-gb-scotland', 'en-029+m3', 'en-us+f2', 'en-gb-x-rp+m1'];
const ANSWERS = [
  'Hello?',
  'Yes?',
  "Hello, who's calling?",
  'Hi.',
  'Hello, Anna speaking.',
  'Yeah, hello?',
  'Good morning.',
  'Speaking.',
  // Long answers, harder: as much voice as a short greeting.
  'Hello, this is Anna Smith, how can I help you?',
  'Yes, hello, who is this please?',
];
const GREETINGS = [
  "Hi, you've reached Sam. I can't take your call right now. Please leave a message after the tone.",
  'Hello, this is the voicemail of Maria Lopez. Leave your name and number and I will call you back.',
  'The person you are calling is not available. Please record your message after the beep.',
  'Thanks for calling Acme Dental. Our office is closed. Please leave a message and we will return your call.',
  "Hey, it's Jo. I'm away from the phone. Leave a message.",
];

interface Case {
  readonly category: string;
  readonly mode: MachineDetectionMode;
  readonly expected: AnsweredBy;
  readonly audio: Int16Array;
  readonly label?: string;
}

let dir: string;
let n = 0;

function raw(file: string): Int16Array {
  const b = readFileSync(file);
  return new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

/** espeak-ng speech as 8 kHz 16-bit samples, scaled by `gain`. */
function speech(text: string, voice: string, speed: number, gain: number): Int16Array {
  const wav = path.join(dir, `s${n++}.wav`);
  const out = `${wav}.raw`;
  execFileSync('espeak-ng', ['-v', voice, '-s', String(speed), '-w', wav, text]);
  execFileSync('sox', [
    '-V1',
    '-R',
    wav,
    '-r',
    '8000',
    '-c',
    '1',
    '-b',
    '16',
    '-e',
    'signed-integer',
    '-t',
    'raw',
    out,
  ]);
  const samples = raw(out);
  // Without espeak-ng's own leading and trailing silence, so the pauses around the speech are the case's own.
  let from = 0;
  let to = samples.length;
  while (from < to && Math.abs(samples[from]!) < 100) from++;
  while (to > from && Math.abs(samples[to - 1]!) < 100) to--;
  return samples.slice(from, to).map((v) => Math.round(v * gain));
}

/** sox synth: `spec` (e.g. ['sine', '1000'] or ['pinknoise']) for `seconds` at `volume` of full scale. */
function synth(seconds: number, spec: string[], volume: number): Int16Array {
  const out = path.join(dir, `t${n++}.raw`);
  execFileSync('sox', [
    ...['-V1', '-R', '-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', '-t', 'raw', out],
    ...['synth', String(seconds), ...spec, 'vol', String(volume)],
  ]);
  return raw(out);
}

function silence(seconds: number): Int16Array {
  return new Int16Array(Math.round(seconds * 8000));
}

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((k, p) => k + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `audio` with line noise added (sox white, pink or brown noise at `volume`), through mu-law and back. */
function line(audio: Int16Array, noise?: { kind: string; volume: number }): Int16Array {
  let mixed = audio;
  if (noise) {
    const hiss = synth(audio.length / 8000, [noise.kind], noise.volume);
    mixed = audio.map((v, i) => Math.max(-32768, Math.min(32767, v + (hiss[i] ?? 0))));
  }
  return decodeG711(encodeG711(mixed, 0), 0);
}

function detect(c: Case): MachineDetectionResult {
  const clock = new ManualClock(0);
  const d = new MachineDetector({ mode: c.mode, clock });
  for (let i = 0; i + AMD_FRAME_SAMPLES <= c.audio.length; i += AMD_FRAME_SAMPLES) {
    clock.advance(20);
    const r = d.push(c.audio.subarray(i, i + AMD_FRAME_SAMPLES)) ?? d.poll();
    if (r) return r;
  }
  for (;;) {
    clock.advance(20);
    const r = d.poll();
    if (r) return r;
  }
}

function cases(): Case[] {
  const out: Case[] = [];
  const noises = [undefined, { kind: 'whitenoise', volume: 0.01 }, { kind: 'pinknoise', volume: 0.02 }];
  // People: an answer after a moment, then waiting.
  ANSWERS.forEach((text, i) => {
    for (const mode of ['Enable', 'DetectMessageEnd'] as const) {
      const k = i * 2 + (mode === 'Enable' ? 0 : 1);
      const voice = VOICES[k % VOICES.length]!;
      const audio = concat(
        silence(0.2 + (k % 5) * 0.3),
        speech(text, voice, 150 + (k % 4) * 15, [1, 0.5, 0.25][k % 3]!),
        silence(6),
      );
      out.push({
        category: 'person answers',
        mode,
        expected: 'human',
        audio: line(audio, noises[k % 3]),
        label: `${text} ${voice} ${k}`,
      });
    }
  });
  // Machines: a greeting, a pause, a beep of one of several pitches and lengths.
  const beeps: [number, number][] = [
    [1000, 0.5],
    [440, 0.3],
    [850, 1],
    [1400, 0.15],
    [1800, 0.4],
    [600, 0.25],
  ];
  GREETINGS.forEach((text, i) => {
    for (let j = 0; j < 3; j++) {
      const k = i * 3 + j;
      const [hz, len] = beeps[k % beeps.length]!;
      const audio = concat(
        silence(0.3 + (k % 3) * 0.4),
        speech(text, VOICES[k % VOICES.length]!, 160 + (k % 3) * 20, [1, 0.6, 0.35][j]!),
        silence(0.2 + (k % 4) * 0.2),
        synth(len, ['sine', String(hz)], 0.3),
        silence(5),
      );
      out.push({
        category: 'greeting, beep',
        mode: 'DetectMessageEnd',
        expected: 'machine_end_beep',
        audio: line(audio, noises[k % 3]),
        label: `${k} ${hz} Hz ${len} s ${JSON.stringify(noises[k % 3])}`,
      });
    }
  });
  // Machines without a beep: the greeting ends in silence.
  GREETINGS.forEach((text, i) => {
    const audio = concat(silence(0.5), speech(text, VOICES[(i + 3) % VOICES.length]!, 170, 0.7), silence(6));
    out.push({
      category: 'greeting, silence',
      mode: 'DetectMessageEnd',
      expected: 'machine_end_silence',
      audio: line(audio, noises[i % 3]),
    });
  });
  // Machines, Enable: decided while the greeting plays.
  GREETINGS.forEach((text, i) => {
    for (let j = 0; j < 2; j++) {
      const k = i * 2 + j;
      const audio = concat(
        silence(0.3 + j * 0.6),
        speech(text, VOICES[(k + 1) % VOICES.length]!, 150 + j * 30, [0.9, 0.4][j]!),
        synth(0.5, ['sine', '1000'], 0.3),
        silence(4),
      );
      out.push({
        category: 'greeting (Enable)',
        mode: 'Enable',
        expected: 'machine_start',
        audio: line(audio, noises[k % 3]),
      });
    }
  });
  // Fax: CNG (1,100 Hz, 0.5 s on, 3 s off) or CED (2,100 Hz for 3 s).
  for (let k = 0; k < 4; k++) {
    const cng = concat(synth(0.5, ['sine', '1100'], 0.2), silence(3));
    const audio =
      k < 3
        ? concat(silence(0.2 + k * 0.5), cng, cng, cng)
        : concat(silence(0.5), synth(3, ['sine', '2100'], 0.2), silence(3));
    out.push({
      category: 'fax',
      mode: k % 2 ? 'Enable' : 'DetectMessageEnd',
      expected: 'fax',
      audio: line(audio, noises[k % 3]),
    });
  }
  // Nobody: silence or line noise only.
  for (let k = 0; k < 4; k++) {
    const audio = silence(8);
    out.push({
      category: 'silence, noise',
      mode: k % 2 ? 'Enable' : 'DetectMessageEnd',
      expected: 'unknown',
      label: `noise ${k}`,
      audio: line(audio, k ? (noises[k % 3] ?? { kind: 'brownnoise', volume: 0.02 }) : undefined),
    });
  }
  return out;
}

describe('answering machine detection accuracy (generated calls)', function () {
  this.timeout(180_000);
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'simu-amd-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(`decides at least ${ACCURACY_FLOOR * 100}% of at least 40 calls right`, () => {
    const all = cases();
    assert.ok(all.length >= 40, String(all.length));
    const rows = new Map<string, { cases: number; right: number; ms: number[]; misses: string[] }>();
    for (const c of all) {
      const r = detect(c);
      const row = rows.get(c.category) ?? { cases: 0, right: 0, ms: [], misses: [] };
      rows.set(c.category, row);
      row.cases += 1;
      if (r.answeredBy === c.expected) {
        row.right += 1;
        row.ms.push(r.durationMs);
      } else {
        row.misses.push(`${r.answeredBy}/${r.reason}`);
        if (process.env.AMD_DEBUG) console.log(c.label, JSON.stringify(r));
      }
    }
    const right = [...rows.values()].reduce((k, r) => k + r.right, 0);
    const lines = [...rows].map(([category, r]) => {
      const mean = r.ms.length ? Math.round(r.ms.reduce((a, b) => a + b, 0) / r.ms.length) : 0;
      const cells = [category.padEnd(20), String(r.cases).padStart(5), String(r.right).padStart(5)];
      return `${cells.join(' ')} ${((100 * r.right) / r.cases).toFixed(0).padStart(5)}% ${String(mean).padStart(7)}  ${r.misses.join(', ')}`;
    });
    console.log(
      [
        `${'category'.padEnd(20)} cases right accuracy mean ms  missed as`,
        ...lines,
        `${'all'.padEnd(20)} ${String(all.length).padStart(5)} ${String(right).padStart(5)} ${((100 * right) / all.length).toFixed(1).padStart(5)}%`,
      ].join('\n'),
    );
    assert.ok(right / all.length >= ACCURACY_FLOOR, `accuracy ${right}/${all.length}`);
  });
});
