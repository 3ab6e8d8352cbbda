import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readWav } from '../../../media/index.js';
import { EN_US_MODEL, SpeechRecognizer, type SpeechResult } from '../../../media/speech/recognizer.js';
import { dictionaryWords, hintGrammar, sanitiseHints } from '../../../media/speech/hints.js';
import { processAlive } from '../helpers.js';
import { eventually } from '../../support/wait.js';

/**
 * The speech recogniser (media/speech/recognizer.ts) with the real pocketsphinx and real espeak-ng speech made
 * telephone-like with sox (8 kHz mono), fed the way a call feeds it: 20 ms frames.
 */
describe('media: speech recogniser (pocketsphinx, espeak-ng utterances at 8 kHz)', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'simu-asr-test-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * espeak-ng says `text`, sox makes it 8 kHz mono with half a second of silence either side: the same samples
   * every run (`-R`: sox seeds its dither, which is otherwise random).
   */
  async function utterance(text: string, voice = 'en-us+f2'): Promise<Int16Array> {
    const raw = join(dir, `${text.replace(/\W/g, '_')}-${voice.replace(/\W/g, '_')}.wav`);
    const out = raw.replace(/\.wav$/, '-8k.wav');
    execFileSync('espeak-ng', ['-v', voice, '-s', '130', '-w', raw, text]);
    execFileSync('sox', ['-R', raw, '-r', '8000', '-c', '1', '-b', '16', out, 'pad', '0.5', '0.5']);
    return (await readWav(out)).samples;
  }

  /**
   * `text` as a call carries it after `silence` seconds of quiet: through mu-law, whose silence is not digital zero
   * (sox's dither, seeded, leaves the odd step of 8 either side).
   */
  async function overTheLine(text: string, silence: number): Promise<Int16Array> {
    const raw = join(dir, `${text.replace(/\W/g, '_')}-line.wav`);
    const ulaw = join(dir, `${text.replace(/\W/g, '_')}-${silence}-ulaw.wav`);
    const out = ulaw.replace(/\.wav$/, '-pcm.wav');
    execFileSync('espeak-ng', ['-v', 'en-us+f2', '-s', '130', '-w', raw, text]);
    execFileSync('sox', ['-R', raw, '-r', '8000', '-c', '1', '-e', 'mu-law', ulaw, 'pad', String(silence), '0.5']);
    execFileSync('sox', [ulaw, '-b', '16', '-e', 'signed-integer', out]);
    return (await readWav(out)).samples;
  }

  async function recognise(samples: Int16Array, hints: string[], maxSeconds = 10): Promise<SpeechResult | null> {
    const r = await SpeechRecognizer.open({ hints, maxSeconds });
    for (let i = 0; i < samples.length; i += 160) r.push(samples.subarray(i, i + 160), 8000);
    r.push(new Int16Array(8000), 8000); // a second of the caller's silence after speaking
    return r.result;
  }

  const HINTS = ['sales', 'support', 'yes', 'no', 'one', 'two'];

  for (const word of ['sales', 'support', 'yes', 'two']) {
    it(`"${word}" said among the hints comes back as "${word}"`, async () => {
      const r = await recognise(await utterance(word), HINTS);
      assert.equal(r?.transcript, word, JSON.stringify(r));
    });
  }

  it('audio that arrives before the decoders can read it is kept for them, not dropped (a slow start)', async () => {
    // A phrase of more than 2 s, all at once while the decoders are still loading their model: the FIFO holds 2 s,
    // so the phrase's end only reaches them if the rest waits for room (it was dropped, and the result null).
    const phrase = 'i would like customer support';
    const said = await utterance(phrase);
    assert.ok(said.length > 8000 * 2.5, `${said.length / 8000} s`);
    const r = await recognise(said, [...HINTS, phrase]);
    assert.equal(r?.transcript, phrase, JSON.stringify(r));
  });

  it('the same words give the same result however long the caller was silent before them', async () => {
    // How much silence a Gather hears before the caller speaks depends on when it started listening. Decoded with
    // the silence, this "support" came back as "support" or "no", and the decoders agreed only without silence.
    const results: (SpeechResult | null)[] = [];
    for (const seconds of [0, 0.4, 1.3, 2.1, 2.9])
      results.push(await recognise(await overTheLine('support', seconds), HINTS));
    assert.deepEqual(results, Array<SpeechResult>(results.length).fill({ transcript: 'support', confidence: 0.9 }));
  });

  it('a hint both decoders agree on has high confidence', async () => {
    const r = await recognise(await utterance('yes'), HINTS);
    assert.equal(r?.transcript, 'yes');
    assert.ok(r!.confidence >= 0.8, `confidence ${r!.confidence}`);
  });

  for (const word of ['banana', 'weather', 'emergency']) {
    it(`"${word}", outside the hints, does not match a hint with high confidence`, async () => {
      const r = await recognise(await utterance(word), HINTS);
      assert.ok(r === null || r.confidence < 0.5, JSON.stringify(r));
    });
  }

  it('silence gives no result, and the audio ends at maxSeconds', async () => {
    const r = await SpeechRecognizer.open({ hints: HINTS, maxSeconds: 1 });
    const started = Date.now();
    for (let i = 0; i < 150; i += 1) r.push(new Int16Array(160), 8000); // 3 s of silence
    assert.equal(await r.result, null);
    assert.ok(Date.now() - started < 3000, `${Date.now() - started} ms`);
    await eventually(() => r.pids.every((p) => !processAlive(p)), 'decoders gone', 3000);
  });

  it('close() kills the decoders at once (the call ended) and the result is null', async () => {
    const r = await SpeechRecognizer.open({ hints: HINTS, maxSeconds: 30 });
    assert.equal(r.pids.length, 2);
    assert.ok(r.pids.every(processAlive));
    r.close();
    assert.equal(await r.result, null);
    await eventually(() => r.pids.every((p) => !processAlive(p)), 'decoders gone', 3000);
    r.close();
  });

  it('hints are reduced to dictionary words of letters (digits spelled), bounded; nothing else reaches the grammar', async () => {
    const words = await dictionaryWords(EN_US_MODEL.dict);
    const isWord = (w: string) => words.has(w);
    const hints = sanitiseHints(
      [
        'Sales!',
        '$(reboot)',
        '`rm -rf /`; <hint> = evil',
        'press 1',
        'Customer   Support',
        'zzqxjw',
        'sales',
        'one two three four five six seven',
        'x'.repeat(500),
        ...Array.from({ length: 200 }, () => 'yes'),
      ],
      isWord,
    );
    assert.deepEqual(hints, [
      'sales',
      'reboot',
      'hint evil', // rm and rf are no dictionary words
      'press one',
      'customer support',
      'one two three four five',
      'yes', // once, however often it is given
    ]);
    assert.match(hintGrammar(hints), /^#JSGF V1\.0;\ngrammar hints;\npublic <hint> = [a-z |]+;\n$/);
    assert.ok(sanitiseHints(Array.from({ length: 500 }, (_, i) => `w${i}`)).length <= 50);
  });
});
