import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import {
  AudioFetcher,
  EspeakTtsEngine,
  MediaError,
  bdecode,
  bencode,
  decodeG711,
  encodeG711,
  readWav,
} from '../../media/index.js';
import { tempDir } from './helpers.js';
import { UrlPolicy } from '../../kit/index.js';
import { tone } from './rtp-peer.js';

const isMediaError = (code: string) => (e: unknown) => e instanceof MediaError && e.code === code;

describe('media: speech (espeak-ng) and fetched audio', function () {
  this.timeout(30_000);
  let data: ReturnType<typeof tempDir>;
  let tts: EspeakTtsEngine;

  before(() => {
    data = tempDir('speech');
    tts = new EspeakTtsEngine({ cacheDir: `${data.dir}/tts` });
  });
  after(() => data.remove());

  it('maps TwiML language and voice onto espeak-ng voices', async () => {
    const voice = async (language: string | undefined, name: string | undefined) => {
      const choice = await tts.resolveVoice(language, name);
      assert.deepEqual(choice.substituted, [], `${language} ${name}`);
      return choice.engineVoice;
    };
    assert.equal(await voice('en-US', 'man'), 'en-us+m3');
    assert.equal(await voice('en-GB', 'woman'), 'en-gb+f3');
    assert.equal(await voice('fr-FR', 'alice'), 'fr-fr+f2');
    assert.equal(await voice('sw', undefined), 'sw');
    assert.equal(await voice('es-MX', undefined), 'es'); // no es-mx voice: its primary subtag
    // Bare tags espeak-ng spells only with a region, and tags it spells otherwise.
    assert.equal(await voice('en', undefined), 'en-us');
    assert.equal(await voice('fr', 'man'), 'fr-fr+m3');
    assert.equal(await voice('zh-CN', undefined), 'cmn');
    assert.equal(await voice('en-GB-WLS', undefined), 'en-gb');
    // Amazon Polly and Google voices: their language and gender, unless `language` says what the text is in.
    assert.equal(await voice(undefined, 'Polly.Joanna'), 'en-us+f3');
    assert.equal(await voice(undefined, 'Polly.Matthew-Neural'), 'en-us+m3');
    assert.equal(await voice(undefined, 'Polly.Brian'), 'en-gb+m3');
    assert.equal(await voice(undefined, 'Polly.Celine'), 'fr-fr+f3');
    assert.equal(await voice(undefined, 'Polly.Vitoria'), 'pt-br+f3');
    assert.equal(await voice('sw-KE', 'Polly.Joanna'), 'sw+f3');
    assert.equal(await voice(undefined, 'Google.en-US-Standard-C'), 'en-us+f3');
    assert.equal(await voice(undefined, 'Google.en-US-Wavenet-D'), 'en-us+m3');
    assert.equal(await voice(undefined, 'Google.de-DE-Neural2-B'), 'de');
  });

  it('a voice or language espeak-ng has nothing near is spoken with the default and listed, never refused', async () => {
    assert.deepEqual(await tts.resolveVoice('xx-YY', undefined), {
      engineVoice: 'en-us',
      substituted: [{ attribute: 'language', value: 'xx-YY' }],
    });
    assert.deepEqual(await tts.resolveVoice(undefined, 'en'), {
      engineVoice: 'en-us',
      substituted: [{ attribute: 'voice', value: 'en' }],
    });
    assert.deepEqual(await tts.resolveVoice('fr-FR', 'Polly.Nobody'), {
      engineVoice: 'fr-fr',
      substituted: [{ attribute: 'voice', value: 'Polly.Nobody' }],
    });
    const spoken = await tts.synthesize({ text: 'hi', voice: 'Polly.Joanna' });
    assert.ok(spoken.seconds > 0.2 && spoken.engineVoice === 'en-us+f3', JSON.stringify(spoken));
    // Names of Object.prototype's members are voices like any other unknown one (it was espeak-ng's -v of a function).
    for (const name of ['constructor', 'toString', '__proto__']) {
      const choice = await tts.resolveVoice('en-GB', name);
      assert.deepEqual(choice, { engineVoice: 'en-gb', substituted: [{ attribute: 'voice', value: name }] });
    }
  });

  it('speaks SSML (break, prosody) through espeak-ng: the markup is obeyed, never read out', async () => {
    const plain = await tts.synthesize({ text: 'Hello world' });
    const paused = await tts.synthesize({ text: '<speak>Hello<break time="1500ms"/>world</speak>', ssml: true });
    assert.ok(paused.seconds > plain.seconds + 1.2, `${paused.seconds} vs ${plain.seconds}`);
    const asText = await tts.synthesize({ text: '<speak>Hello<break time="1500ms"/>world</speak>' });
    assert.ok(asText.seconds > paused.seconds, 'without ssml the markup is read out as text');
    // Only the SSML verbs/ssml.ts builds reaches espeak-ng: audio, for one, reads a file.
    await assert.rejects(
      tts.synthesize({ text: '<speak><audio src="/etc/passwd">x</audio></speak>', ssml: true }),
      isMediaError('MEDIA_TTS_FAILED'),
    );
  });

  it('synthesizes an 8 kHz mono WAV, reports its seconds, and serves the second request from the cache', async () => {
    const first = await tts.synthesize({ text: 'Habari, karibu.', language: 'sw' });
    assert.equal(first.cached, false);
    const wav = await readWav(first.path);
    assert.equal(wav.sampleRate, 8000);
    assert.equal(wav.channels, 1);
    assert.ok(first.seconds > 0.5 && first.seconds < 5);
    assert.equal(first.seconds, wav.samples.length / 8000);
    const again = await tts.synthesize({ text: 'Habari, karibu.', language: 'sw' });
    assert.equal(again.cached, true);
    assert.equal(again.path, first.path);
    const otherVoice = await tts.synthesize({ text: 'Habari, karibu.', language: 'sw', voice: 'woman' });
    assert.notEqual(otherVoice.path, first.path);
  });

  describe('audio URLs', () => {
    let server: Server;
    let base: string;
    let fetcher: AudioFetcher;
    let wavBytes: Buffer;
    let hits = 0;

    before(async () => {
      const speech = await tts.synthesize({ text: 'Thank you for calling.' });
      wavBytes = readFileSync(speech.path);
      server = createServer((req, res) => {
        hits++;
        if (req.url === '/hello.wav') {
          res.writeHead(200, { 'content-type': 'audio/wav' });
          res.end(wavBytes);
        } else if (req.url === '/garbage.wav') {
          res.writeHead(200, { 'content-type': 'audio/wav' });
          res.end(Buffer.alloc(5000, 7));
        } else if (req.url === '/big.wav') {
          res.writeHead(200, { 'content-type': 'audio/wav' });
          res.end(Buffer.alloc(300_000));
        } else if (req.url === '/slow.wav') {
          setTimeout(() => res.end(wavBytes), 2000);
        } else {
          res.writeHead(404);
          res.end();
        }
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // The server is on loopback: the operator's opt-in to private destinations (webhooks.allowPrivate).
      const urlPolicy = new UrlPolicy({ allowPrivate: true });
      fetcher = new AudioFetcher({ cacheDir: `${data.dir}/audio`, maxBytes: 200_000, timeoutMs: 500, urlPolicy });
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });

    it('fetches, converts to 8 kHz WAV and caches', async () => {
      const a = await fetcher.fetch(`${base}/hello.wav`);
      assert.equal(a.cached, false);
      assert.equal((await readWav(a.path)).sampleRate, 8000);
      assert.ok(a.seconds > 0.5);
      assert.equal((await fetcher.fetch(`${base}/hello.wav`)).cached, true);
    });

    it('a 404, an oversized body or a slow server is MEDIA_FETCH_FAILED; an undecodable body MEDIA_DECODE_FAILED', async () => {
      await assert.rejects(fetcher.fetch(`${base}/missing.wav`), isMediaError('MEDIA_FETCH_FAILED'));
      await assert.rejects(fetcher.fetch(`${base}/big.wav`), isMediaError('MEDIA_FETCH_FAILED'));
      await assert.rejects(fetcher.fetch(`${base}/slow.wav`), isMediaError('MEDIA_FETCH_FAILED'));
      await assert.rejects(fetcher.fetch(`${base}/garbage.wav`), isMediaError('MEDIA_DECODE_FAILED'));
      await assert.rejects(fetcher.fetch('file:///etc/passwd'), isMediaError('MEDIA_FETCH_FAILED'));
    });

    it('without the opt-in, a Play URL on loopback (by name or number) is refused before any request (issue 22)', async () => {
      const strict = new AudioFetcher({ cacheDir: `${data.dir}/audio-strict`, timeoutMs: 500 });
      const before = hits;
      const port = new URL(base).port;
      for (const url of [
        `${base}/hello.wav`,
        `http://localhost:${port}/hello.wav`,
        `http://2130706433:${port}/x.wav`,
      ]) {
        await assert.rejects(strict.fetch(url), isMediaError('MEDIA_FETCH_FAILED'), url);
      }
      assert.equal(hits, before, 'the loopback server was never asked');
    });
  });
});

describe('media: codecs and encodings', () => {
  it('G.711 mu-law and A-law round-trip a tone within quantisation error', () => {
    const t = tone(440, 0.1, 12000);
    for (const pt of [0, 8] as const) {
      const back = decodeG711(encodeG711(t, pt), pt);
      let maxErr = 0;
      for (let i = 0; i < t.length; i += 1) maxErr = Math.max(maxErr, Math.abs((t[i] ?? 0) - (back[i] ?? 0)));
      assert.ok(maxErr < 12000 * 0.04, `payload type ${pt}: max error ${maxErr}`);
    }
  });

  it('bencode round-trips the shapes of ng messages', () => {
    const msg = { command: 'offer', 'call-id': 'abc', flags: ['trust-address'], codec: { transcode: ['PCMU'] }, n: 3 };
    assert.deepEqual(bdecode(bencode(msg)), msg);
    assert.equal(bencode({ b: 1, a: 'x' }).toString(), 'd1:a1:x1:bi1ee');
  });
});
