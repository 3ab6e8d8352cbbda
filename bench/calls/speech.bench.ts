/**
 * Speech Gathers the box holds (issue 16, done when: "the number of concurrent speech Gathers the box holds"):
 * N recognitions at once (media/speech/recognizer.ts, two pocketsphinx processes each), each fed the same
 * espeak-ng utterance of a hint word at 8 kHz, paced in real time in 20 ms frames as a call delivers it (1 s of
 * silence, the word, 1.5 s of silence). Per step: how many came back right, the delay from the end of the word
 * to the result (p50, max), the decoders' CPU per recognition (their /proc stat, sampled until they exit) and
 * the CPU of this process (feeding audio) per recognition.
 *
 * The box "holds" N while every recognition is right and answers within 1.5 s of the end of speech.
 *
 *   npx tsx bench/calls/speech.bench.ts [concurrency=1,4,8,16,32]
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readWav } from '../../media/index.js';
import { SpeechRecognizer } from '../../media/speech/recognizer.js';

const STEPS = (process.argv[2] ?? '1,4,8,16,32').split(',').map(Number);
const HINTS = ['sales', 'support', 'billing', 'yes', 'no'];
const WORD = 'support';
const TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-speech-bench-'));
execFileSync('espeak-ng', ['-v', 'en-us+f2', '-s', '130', '-w', path.join(dir, 'raw.wav'), WORD]);
execFileSync('sox', [path.join(dir, 'raw.wav'), '-r', '8000', '-c', '1', '-b', '16', path.join(dir, 'w.wav')]);
const word = (await readWav(path.join(dir, 'w.wav'))).samples;
const audio = new Int16Array(8000 + word.length + 12000);
audio.set(word, 8000);
const speechEndsAtMs = ((8000 + word.length) / 8000) * 1000;

/** utime + stime of a process, seconds; undefined once it is gone. */
function cpuOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return undefined;
  }
}

async function step(n: number) {
  const recognizers = await Promise.all(Array.from({ length: n }, () => SpeechRecognizer.open({ hints: HINTS })));
  const cpu = new Map<number, number>();
  const sample = () => {
    for (const r of recognizers) for (const pid of r.pids) cpu.set(pid, cpuOf(pid) ?? cpu.get(pid) ?? 0);
  };
  const sampler = setInterval(sample, 50);
  const start = Date.now();
  const ownCpu = process.cpuUsage();
  const latencies: number[] = [];
  let right = 0;
  const results = recognizers.map((r) =>
    r.result.then((res) => {
      latencies.push(Date.now() - start - speechEndsAtMs);
      if (res?.transcript === WORD) right += 1;
    }),
  );
  for (let i = 0, frame = 0; i < audio.length; i += 160, frame += 1) {
    const chunk = audio.subarray(i, i + 160);
    for (const r of recognizers) r.push(chunk, 8000);
    const wait = start + (frame + 1) * 20 - Date.now();
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
  }
  for (const r of recognizers) r.end();
  sample();
  await Promise.all(results);
  clearInterval(sampler);
  const own = process.cpuUsage(ownCpu);
  latencies.sort((a, b) => a - b);
  const decoderCpu = [...cpu.values()].reduce((a, b) => a + b, 0);
  return {
    n,
    right,
    p50: latencies[Math.floor(latencies.length / 2)]!,
    max: latencies[latencies.length - 1]!,
    decoderMs: (decoderCpu * 1000) / n,
    ownMs: (own.user + own.system) / 1000 / n,
  };
}

console.log(`speech recognitions at once, each fed ${(audio.length / 8000).toFixed(1)} s of 8 kHz audio ("${WORD}")`);
console.log(
  '| at once | right | result after speech p50 | max | decoder CPU ms / recognition | feeding CPU ms / recognition |',
);
console.log('|---|---|---|---|---|---|');
for (const n of STEPS) {
  const r = await step(n);
  console.log(
    `| ${r.n} | ${r.right}/${r.n} | ${Math.round(r.p50)} ms | ${Math.round(r.max)} ms | ${r.decoderMs.toFixed(0)} | ${r.ownMs.toFixed(1)} |`,
  );
}
console.log(`${os.cpus().length} CPUs, ${os.cpus()[0]?.model ?? ''}`);
