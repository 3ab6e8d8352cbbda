import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readWav } from '../../media/index.js';
import { CallSpeech } from '../../calls/call-speech.js';

/**
 * A speech Gather's listening (calls/call-speech.ts) with the real recogniser (pocketsphinx): the caller is heard
 * from the moment the Gather listens, not from when the recogniser has opened, which takes a moment.
 */
describe('calls: CallSpeech hears the caller from the start', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'simu-call-speech-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a word said while the recogniser is still opening comes back', async () => {
    const raw = join(dir, 'raw.wav');
    const wav = join(dir, 'said.wav');
    execFileSync('espeak-ng', ['-v', 'en-us+f2', '-s', '130', '-w', raw, 'support']);
    // -R: sox seeds its dither, so the caller says the same samples every run.
    execFileSync('sox', ['-R', raw, '-r', '8000', '-c', '1', '-b', '16', wav, 'pad', '0.3', '1.5']);
    const said = (await readWav(wav)).samples;
    // The call's media: whoever taps the caller's audio gets it as it arrives.
    const taps = new Set<(samples: Int16Array) => void>();
    const media = {
      tapAudio: (_callId: string, _leg: string, onAudio: (samples: Int16Array) => void) => {
        taps.add(onAudio);
        return () => void taps.delete(onAudio);
      },
    };
    const speech = new CallSpeech(media);
    const heard = speech.recognise('call-1', {
      hints: ['sales', 'support', 'billing'],
      signal: new AbortController().signal,
    });
    // The caller answers at once, in 20 ms frames, before the recogniser has opened.
    for (let i = 0; i < said.length; i += 160) for (const tap of taps) tap(said.slice(i, i + 160));
    const r = await heard;
    assert.equal(r?.text, 'support', JSON.stringify(r));
    assert.equal(taps.size, 0, 'the tap is removed once it answered');
  });
});
