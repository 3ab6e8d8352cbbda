import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  AudioFetcher,
  AudioImportError,
  EspeakTtsEngine,
  MAX_PLAYBACK_SECONDS,
  MediaError,
  convertToPlaybackWav,
  encodeWav,
  readWav,
  readWavHeader,
  soxReadableFormats,
} from '../../media/index.js';
import { UrlPolicy } from '../../kit/index.js';
import { tempDir } from './helpers.js';

/**
 * Outside audio reaches sox only as a file we name, with its type from its own first bytes (issue 22): a playlist
 * (whose `http:` entries sox fetches with `wget` run by /bin/sh, and whose absolute paths it opens) is refused
 * whatever the URL or Content-Type says, real audio converts whatever they say, and output stops at 10 minutes.
 */
const isDecodeFailure = (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_DECODE_FAILED';

function sox(...args: string[]): void {
  execFileSync('sox', args, { stdio: 'ignore' });
}

describe('media: outside audio is decoded by its own bytes, never as a playlist, and cut at the cap', function () {
  this.timeout(60_000);
  let data: ReturnType<typeof tempDir>;
  let server: Server;
  let base: string;
  let fetcher: AudioFetcher;
  /** Marker files a playlist entry would create if sox ran its `$(touch ...)` through a shell. */
  let markers: string[];
  /** A real WAV another tenant owns: a playlist names it by absolute path. */
  let secretWav: string;
  const bodies = new Map<string, { type: string; body: Buffer }>();

  before(async () => {
    data = tempDir('formats');
    const d = data.dir;
    secretWav = join(d, 'other-tenant-recording.wav');
    sox('-n', '-r', '8000', '-c', '1', '-b', '16', secretWav, 'synth', '2', 'sine', '440');
    markers = [1, 2, 3, 4].map((i) => join(d, `pwned-${process.pid}-${i}`));
    const m3u = (marker: string) => Buffer.from(`#EXTM3U\nhttp://x/$(touch ${marker}).wav\n${secretWav}\n`);
    const pls = (marker: string) =>
      Buffer.from(`[playlist]\nFile1=http://x/$(touch ${marker}).wav\nFile2=${secretWav}\nNumberOfEntries=2\n`);
    bodies.set('/list.m3u', { type: 'audio/x-mpegurl', body: m3u(markers[0]!) });
    bodies.set('/list.pls', { type: 'audio/x-scpls', body: pls(markers[1]!) });
    bodies.set('/stream', { type: 'audio/x-mpegurl', body: m3u(markers[2]!) });
    bodies.set('/hold.wav', { type: 'audio/wav', body: pls(markers[3]!) });
    bodies.set('/only-path.m3u', { type: 'audio/x-mpegurl', body: Buffer.from(`${secretWav}\n`) });
    bodies.set('/page.wav', { type: 'audio/wav', body: Buffer.from('<!doctype html><html><body>hi</body></html>') });
    for (const ext of ['wav', 'au', 'aiff', 'aifc', 'flac', 'ogg', 'mp3']) {
      const file = join(d, `tone.${ext}`);
      sox('-n', '-r', '16000', '-c', '2', file, 'synth', '1.5', 'sine', '300');
      // Served under a playlist-looking URL and a wrong type: the bytes decide, and they say audio.
      bodies.set(`/real/${ext}.m3u`, { type: 'audio/x-mpegurl', body: readFileSync(file) });
    }
    const long = join(d, 'long.ogg');
    sox('-n', '-r', '8000', '-c', '1', long, 'synth', String(MAX_PLAYBACK_SECONDS + 60), 'sine', '300');
    bodies.set('/long.ogg', { type: 'audio/ogg', body: readFileSync(long) });
    server = createServer((req, res) => {
      const hit = bodies.get(req.url ?? '');
      if (!hit) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': hit.type });
      res.end(hit.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The audio server is on loopback, which the SSRF guard (kit/) refuses unless private addresses are allowed.
    const opts = { cacheDir: join(d, 'cache'), maxBytes: 5_000_000, urlPolicy: new UrlPolicy({ allowPrivate: true }) };
    fetcher = new AudioFetcher(opts);
  });
  after(() => {
    server?.closeAllConnections();
    server?.close();
    data?.remove();
  });

  it('an m3u or pls playlist, by URL or by Content-Type, is refused and none of its commands ran', async () => {
    for (const url of ['/list.m3u', '/list.pls', '/stream', '/hold.wav']) {
      await assert.rejects(fetcher.fetch(`${base}${url}`), isDecodeFailure, url);
    }
    for (const marker of markers) assert.equal(existsSync(marker), false, `${marker} was created`);
  });

  it("a playlist naming another file on this machine is refused: that file's audio is never converted", async () => {
    await assert.rejects(fetcher.fetch(`${base}/only-path.m3u`), isDecodeFailure);
  });

  it('a web page served as audio/wav is refused as MEDIA_DECODE_FAILED', async () => {
    await assert.rejects(fetcher.fetch(`${base}/page.wav`), isDecodeFailure);
  });

  it('real WAV, AU, AIFF, AIFC, FLAC, Ogg (and MP3 when this sox reads it) convert to 8 kHz mono', async () => {
    const readable = await soxReadableFormats();
    for (const ext of ['wav', 'au', 'aiff', 'aifc', 'flac', 'ogg', 'mp3']) {
      if (ext === 'mp3' && !readable.has('mp3')) continue;
      const a = await fetcher.fetch(`${base}/real/${ext}.m3u`);
      const h = await readWavHeader(a.path);
      assert.deepEqual([h.sampleRate, h.channels, h.bitsPerSample], [8000, 1, 16], ext);
      // MP3 frames pad the end a little; the others are exact.
      assert.ok(Math.abs(a.seconds - 1.5) < (ext === 'mp3' ? 0.15 : 0.01), `${ext}: ${a.seconds}`);
    }
  });

  it(`audio longer than ${MAX_PLAYBACK_SECONDS} s is cut there at conversion`, async () => {
    const a = await fetcher.fetch(`${base}/long.ogg`);
    assert.equal(a.seconds, MAX_PLAYBACK_SECONDS);
    const h = await readWavHeader(a.path);
    assert.equal(h.dataBytes, MAX_PLAYBACK_SECONDS * 8000 * 2);
    assert.equal((await fetcher.fetch(`${base}/long.ogg`)).seconds, MAX_PLAYBACK_SECONDS); // cached: from the header
  });

  it('an uploaded asset is refused as a playlist, and a source name sox would read as a playlist is refused', async () => {
    const upload = join(data.dir, 'asset.upload');
    writeFileSync(upload, bodies.get('/list.m3u')!.body);
    await assert.rejects(
      convertToPlaybackWav(upload, join(data.dir, 'asset.wav')),
      (e: unknown) => e instanceof AudioImportError && e.reason === 'unsupported',
    );
    const named = join(data.dir, 'named.m3u');
    writeFileSync(named, readFileSync(secretWav));
    await assert.rejects(
      convertToPlaybackWav(named, join(data.dir, 'named.wav')),
      (e: unknown) => e instanceof AudioImportError && e.reason === 'unsupported',
    );
    assert.equal(existsSync(markers[0]!), false);
  });
});

describe('media: WAV durations come from the header', () => {
  let data: ReturnType<typeof tempDir>;
  before(() => (data = tempDir('wavhdr')));
  after(() => data.remove());

  const pcm = (n: number) => encodeWav({ sampleRate: 8000, channels: 1, samples: new Int16Array(n) });

  it('reads rate, channels and seconds, skipping chunks before data', async () => {
    const plain = pcm(12_000);
    // RIFF header, a LIST chunk of 6 bytes (odd sizes are padded), then fmt and data as encodeWav wrote them.
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([5, 0, 0, 0]), Buffer.from('INFOx\0')]);
    const withList = Buffer.concat([plain.subarray(0, 12), list, plain.subarray(12)]);
    const file = join(data.dir, 'list.wav');
    writeFileSync(file, withList);
    const h = await readWavHeader(file);
    assert.deepEqual([h.sampleRate, h.channels, h.bitsPerSample, h.seconds], [8000, 1, 16, 1.5]);
    assert.equal((await readWav(file)).samples.length, 12_000);
  });

  it('a streamed size (0xffffffff) or one past the end means "to the end of the file"', async () => {
    const b = pcm(8000);
    b.writeUInt32LE(0xffffffff, 40);
    const file = join(data.dir, 'streamed.wav');
    writeFileSync(file, b.subarray(0, 44 + 4000));
    assert.equal((await readWavHeader(file)).seconds, 0.25);
  });

  it('an hour of audio costs a few reads: the header of a sparse 57.6 MB file gives 3600 s', async () => {
    const file = join(data.dir, 'hour.wav');
    const head = pcm(0);
    head.writeUInt32LE(3600 * 16_000, 40);
    writeFileSync(file, head);
    truncateSync(file, 44 + 3600 * 16_000);
    assert.equal((await readWavHeader(file)).seconds, 3600);
  });

  it('what is not RIFF/WAVE is MEDIA_DECODE_FAILED', async () => {
    const file = join(data.dir, 'not.wav');
    writeFileSync(file, '#EXTM3U\n/etc/passwd\n');
    await assert.rejects(readWavHeader(file), isDecodeFailure);
  });
});

describe('media: espeak-ng text never becomes an option or markup', function () {
  this.timeout(30_000);
  let data: ReturnType<typeof tempDir>;
  before(() => (data = tempDir('tts-args')));
  after(() => data.remove());

  it('text that looks like espeak-ng options or SSML is spoken, not obeyed', async () => {
    const tts = new EspeakTtsEngine({ cacheDir: join(data.dir, 'tts') });
    const written = join(data.dir, 'written.wav');
    const r = await tts.synthesize({ text: `-w ${written} --stdout -m <audio src="/etc/passwd"/>` });
    assert.ok(r.seconds > 1, `${r.seconds}`);
    assert.equal(existsSync(written), false);
  });
});
