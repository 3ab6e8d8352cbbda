/**
 * CPU per answering machine detection (media/machine-detector.ts): the detector run over generated calls (a person
 * answering, a greeting with a beep, a fax tone, silence; espeak-ng and sox, made into a temporary directory) as
 * fast as it goes, one frame at a time as the switch feeds it. CPU = this process's user+system time over the runs.
 * The per-second figure is what one live detection costs a core: at 200 calls/s with detection on every call and
 * up to ~8 s each, about 1,600 detections run at once.
 *
 *   npx tsx bench/media/amd.bench.ts [--runs 200]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '../../kit/clock.js';
import { decodeG711, encodeG711 } from '../../media/g711.js';
import { AMD_FRAME_SAMPLES, MachineDetector, type MachineDetectionMode } from '../../media/machine-detector.js';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 200) || 200;
const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-amd-bench-'));

function raw(name: string, inputs: string[], effects: string[] = []): Int16Array {
  const out = path.join(dir, `${name}.raw`);
  execFileSync('sox', [
    '-V1',
    '-R',
    ...inputs,
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
    ...effects,
  ]);
  const b = readFileSync(out);
  return decodeG711(encodeG711(new Int16Array(b.buffer, b.byteOffset, b.length / 2), 0), 0);
}
const synth = ['-r', '8000', '-c', '1', '-n'];
function speech(name: string, text: string): Int16Array {
  const wav = path.join(dir, `${name}.wav`);
  execFileSync('espeak-ng', ['-w', wav, text]);
  return raw(name, [wav]);
}
function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
const silence = (s: number) => new Int16Array(Math.round(s * 8000));

const cases: { name: string; mode: MachineDetectionMode; audio: Int16Array }[] = [
  { name: 'person (human)', mode: 'Enable', audio: concat(silence(0.4), speech('hello', 'Hello?'), silence(6)) },
  {
    name: 'greeting + beep (machine_end_beep)',
    mode: 'DetectMessageEnd',
    audio: concat(
      speech(
        'greeting',
        "Hi, you've reached Sam. I can't take your call right now. Please leave a message after the tone.",
      ),
      silence(0.3),
      raw('beep', synth, ['synth', '0.5', 'sine', '1000', 'vol', '0.3']),
      silence(3),
    ),
  },
  {
    name: 'greeting (machine_start)',
    mode: 'Enable',
    audio: concat(speech('g2', 'Hello, this is the voicemail of Maria Lopez. Leave your name and number.'), silence(3)),
  },
  {
    name: 'fax CNG (fax)',
    mode: 'Enable',
    audio: concat(silence(0.3), raw('cng', synth, ['synth', '0.5', 'sine', '1100', 'vol', '0.2']), silence(3)),
  },
  { name: 'silence (unknown)', mode: 'Enable', audio: silence(6) },
];

console.log(`${runs} detections per case; CPU = user+system of this process`);
console.log(
  'case | verdict | audio s analysed | CPU ms per detection | CPU us per audio s | % of a core per live detection',
);
for (const c of cases) {
  let verdict = '';
  let audioMs = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < runs; i++) {
    const clock = new ManualClock(0);
    const d = new MachineDetector({ mode: c.mode, clock });
    let r = undefined;
    for (let at = 0; !r; at += AMD_FRAME_SAMPLES) {
      clock.advance(20);
      r = at + AMD_FRAME_SAMPLES <= c.audio.length ? d.push(c.audio.subarray(at, at + AMD_FRAME_SAMPLES)) : d.poll();
    }
    verdict = r.answeredBy;
    audioMs = r.audioMs;
  }
  const used = process.cpuUsage(start);
  const cpuMs = (used.user + used.system) / 1000 / runs;
  const perAudioSecondUs = (cpuMs * 1000) / (audioMs / 1000);
  console.log(
    [
      c.name,
      verdict,
      (audioMs / 1000).toFixed(2),
      cpuMs.toFixed(3),
      perAudioSecondUs.toFixed(0),
      (perAudioSecondUs / 1e4).toFixed(4),
    ].join(' | '),
  );
}
rmSync(dir, { recursive: true, force: true });
