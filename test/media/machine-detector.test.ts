/**
 * The answering machine detector (media/machine-detector.ts) on synthetic frames and a manual clock: what each
 * shape of audio is decided as, when, and the segments reported with it.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../kit/clock.js';
import {
  AMD_FRAME_SAMPLES,
  analyseFrame,
  MachineDetector,
  type MachineDetectionMode,
  type MachineDetectionParams,
  type MachineDetectionResult,
} from '../../media/machine-detector.js';
import { sine } from '../support/tones.js';

/** A pseudo-random generator, so "speech" and noise are the same every run. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Voiced-speech-like sound: a 150 Hz pulse train's harmonics with a wobbling pitch, loud (mean |x| ~ 2,000). */
function voice(seconds: number, seed = 1): Int16Array {
  const rnd = lcg(seed);
  const out = new Int16Array(Math.round(seconds * 8000));
  let phase = 0;
  for (let i = 0; i < out.length; i++) {
    const f0 = 130 + 40 * Math.sin(i / 1600) + 10 * rnd();
    phase += (2 * Math.PI * f0) / 8000;
    let v = 0;
    for (let h = 1; h <= 12; h++) v += Math.sin(h * phase) * (1 / h) * (h === 3 || h === 5 ? 1.5 : 1);
    out[i] = Math.round(2500 * v + 300 * (rnd() - 0.5));
  }
  return out;
}

function silence(seconds: number): Int16Array {
  return new Int16Array(Math.round(seconds * 8000));
}

function noise(seconds: number, amplitude: number, seed = 7): Int16Array {
  const rnd = lcg(seed);
  const out = new Int16Array(Math.round(seconds * 8000));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * 2 * (rnd() - 0.5));
  return out;
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

/** Words of `wordS` separated by `gapS` of silence. */
function words(n: number, wordS = 0.35, gapS = 0.15): Int16Array {
  const parts: Int16Array[] = [];
  for (let i = 0; i < n; i++) parts.push(voice(wordS, i + 1), silence(gapS));
  return concat(...parts);
}

/** Feeds `audio` frame by frame in real time on a manual clock; the result and the audio time it came at. */
function detect(
  audio: Int16Array,
  mode: MachineDetectionMode = 'DetectMessageEnd',
  params: Partial<MachineDetectionParams> = {},
): MachineDetectionResult {
  const clock = new ManualClock(1000);
  const d = new MachineDetector({ mode, params, clock });
  for (let i = 0; i + AMD_FRAME_SAMPLES <= audio.length; i += AMD_FRAME_SAMPLES) {
    clock.advance(20);
    const r = d.push(audio.subarray(i, i + AMD_FRAME_SAMPLES)) ?? d.poll();
    if (r) return r;
  }
  for (;;) {
    clock.advance(20);
    const r = d.poll();
    if (r) return r;
  }
}

describe('answering machine detector', () => {
  it('tells silence, voice and a tone apart frame by frame', () => {
    assert.equal(analyseFrame(silence(0.02), 256).kind, 'silence');
    assert.equal(analyseFrame(voice(0.02), 256).kind, 'voice');
    const tone = analyseFrame(sine(1000, 0.02, 8000), 256);
    assert.equal(tone.kind, 'tone');
    assert.ok(Math.abs(tone.freqHz! - 1000) <= 5, String(tone.freqHz));
    // Quiet hiss crosses zero at every other sample: silence, though above the energy threshold.
    assert.equal(analyseFrame(noise(0.02, 600), 256).kind, 'silence');
    // The line's noise floor lifts the bar: sound at twice the floor is not voice.
    assert.equal(
      analyseFrame(
        voice(0.02).map((v) => v / 8),
        256,
        200,
      ).kind,
      'silence',
    );
  });

  it('a short answer then silence is a person, decided after the after-greeting silence', () => {
    const r = detect(concat(silence(0.4), words(1, 0.5), silence(5)));
    assert.equal(r.answeredBy, 'human');
    assert.equal(r.reason, 'after_greeting_silence');
    assert.ok(r.durationMs >= 1700 && r.durationMs <= 1800, String(r.durationMs));
    assert.equal(r.words, 1);
    assert.deepEqual(
      r.segments.map((s) => s.kind),
      ['silence', 'voice', 'silence'],
    );
    assert.equal(r.segments[1]!.startMs, 400);
    assert.ok(Math.abs(r.segments[1]!.endMs - 900) <= 20);
  });

  it('a long greeting is machine_start with Enable, as soon as the greeting is long enough', () => {
    const r = detect(concat(silence(0.3), voice(6)), 'Enable');
    assert.equal(r.answeredBy, 'machine_start');
    assert.equal(r.reason, 'long_greeting');
    assert.equal(r.durationMs, 300 + 1500);
  });

  it('many words are a machine even before the greeting is long', () => {
    const r = detect(concat(words(8, 0.2, 0.2), silence(3)), 'Enable', { greetingMs: 5000 });
    assert.equal(r.answeredBy, 'machine_start');
    assert.equal(r.reason, 'max_words');
    assert.equal(r.words, 6);
  });

  it('with DetectMessageEnd, a greeting then a beep is machine_end_beep at the end of the beep', () => {
    const r = detect(concat(silence(0.3), words(12), silence(0.5), sine(1000, 0.4, 8000), silence(3)));
    assert.equal(r.answeredBy, 'machine_end_beep');
    assert.equal(r.reason, 'beep');
    const beep = r.segments.find((s) => s.kind === 'tone')!;
    assert.ok(Math.abs(beep.freqHz! - 1000) <= 10);
    assert.equal(beep.endMs - beep.startMs, 400);
    assert.ok(r.audioMs - beep.endMs <= 40, `${r.audioMs} vs ${beep.endMs}`);
  });

  it('a beep outside 400-2,000 Hz or longer than 1.5 s is not a beep: the silence after it ends the message', () => {
    for (const tone of [sine(300, 0.4, 8000), sine(1000, 2, 8000)]) {
      const r = detect(concat(silence(0.3), words(12), silence(0.3), tone, silence(3)));
      assert.equal(r.answeredBy, 'machine_end_silence');
      assert.equal(r.reason, 'end_silence');
    }
  });

  it('with DetectMessageEnd, a greeting then silence is machine_end_silence after the end silence', () => {
    const audio = concat(silence(0.3), words(12), silence(4));
    const r = detect(audio);
    assert.equal(r.answeredBy, 'machine_end_silence');
    const lastVoice = r.segments.filter((s) => s.kind === 'voice').at(-1)!;
    assert.equal(r.audioMs - lastVoice.endMs, 1200);
  });

  it('a greeting that never ends is machine_end_other at the time limit', () => {
    const r = detect(voice(12), 'DetectMessageEnd', { timeoutMs: 8000 });
    assert.equal(r.answeredBy, 'machine_end_other');
    assert.equal(r.reason, 'timeout');
    assert.equal(r.durationMs, 8000);
  });

  it('a fax calling tone (CNG, 1,100 Hz) is fax once it has sounded 400 ms', () => {
    const r = detect(concat(silence(0.5), sine(1100, 0.5, 6000), silence(3), sine(1100, 0.5, 6000)));
    assert.equal(r.answeredBy, 'fax');
    assert.equal(r.reason, 'fax_tone');
    assert.equal(r.audioMs, 900);
  });

  it('a fax answer tone (CED, 2,100 Hz) is fax', () => {
    assert.equal(detect(concat(silence(0.2), sine(2100, 3, 6000))).answeredBy, 'fax');
  });

  it('silence is unknown at the initial silence timeout, even when no packet arrives', () => {
    const clock = new ManualClock(0);
    const d = new MachineDetector({ mode: 'Enable', params: { initialSilenceMs: 3000 }, clock });
    let r: MachineDetectionResult | undefined;
    while (!r) {
      clock.advance(100);
      r = d.poll();
    }
    assert.equal(r.answeredBy, 'unknown');
    assert.equal(r.reason, 'initial_silence');
    assert.equal(r.durationMs, 3000 + 200);
    assert.equal(d.poll(), undefined, 'decided once');
    assert.equal(d.push(voice(0.02)), undefined);
  });

  it('line noise alone is unknown, and speech over it is still heard', () => {
    assert.equal(detect(noise(8, 500)).answeredBy, 'unknown');
    const hum = (a: Int16Array) => a.map((v, i) => v + Math.round(200 * Math.sin(i / 10)) + (i % 7) * 30);
    assert.equal(detect(hum(concat(noise(0.5, 300), words(1, 0.6), noise(4, 300)))).answeredBy, 'human');
  });

  it('a vowel steady for a moment is voice, not a tone', () => {
    const r = detect(concat(silence(0.3), sine(500, 0.08, 4000), voice(0.3), silence(3)));
    assert.equal(r.answeredBy, 'human');
    assert.equal(r.segments.filter((s) => s.kind === 'tone').length, 0);
  });
});
