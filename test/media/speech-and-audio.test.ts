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
    assert.equal(await tts.resolveVoice('en-US', 'man'), 'en-us+m3');
    assert.equal(await tts.resolveVoice('en-GB', 'woman'), 'en-gb+f3');
    assert.equal(await tts.resolveVoice('fr-FR', 'alice'), 'fr-fr+f2');
    assert.equal(await tts.resolveVoice('sw', undefined), 'sw');
    assert.equal(await tts.resolveVoice('es-MX', undefined), 'es'); // no es-mx voice: its primary subtag
  });

  it('refuses an unsupported language or voice with MEDIA_UNSUPPORTED_VOICE', async () => {
    await assert.rejects(tts.resolveVoice('xx-YY', undefined), isMediaError('MEDIA_UNSUPPORTED_VOICE'));
    await assert.rejects(
      tts.synthesize({ text: 'hi', voice: 'Polly.Joanna' }),
      isMediaError('MEDIA_UNSUPPORTED_VOICE'),
    );
    // Names of Object.prototype's members are voices like any other unknown one (it was espeak-ng's -v of a function).
    for (const voice of ['constructor', 'toString', '__proto__'])
      await assert.rejects(tts.resolveVoice('en-GB', voice), isMediaError('MEDIA_UNSUPPORTED_VOICE'));
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
