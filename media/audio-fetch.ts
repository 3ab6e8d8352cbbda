import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { MediaError } from './errors.js';
import { runTool } from './run-tool.js';
import { readWav } from './wav.js';

/**
 * Audio named by URL (Play with a URL, fallback prompts), fetched with size and time limits, converted by sox to
 * an 8 kHz mono WAV and cached by URL. A fetch problem is MEDIA_FETCH_FAILED and an undecodable body is
 * MEDIA_DECODE_FAILED, so a verb can turn either into PLAY.0404 or a fallback.
 * sox here reads wav, au, aiff, flac, ogg/vorbis, gsm and raw G.711; it has no MP3 support on this Debian.
 */
export interface FetchedAudio {
  path: string;
  seconds: number;
  cached: boolean;
}

const TYPE_BY_MIME: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/basic': 'au',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/aiff': 'aiff',
  'audio/x-aiff': 'aiff',
};

export class AudioFetcher {
  readonly #cacheDir: string;
  readonly #maxBytes: number;
  readonly #timeoutMs: number;
  readonly #inFlight = new Map<string, Promise<FetchedAudio>>();

  constructor(opts: { cacheDir: string; maxBytes?: number; timeoutMs?: number }) {
    this.#cacheDir = opts.cacheDir;
    this.#maxBytes = opts.maxBytes ?? 20 * 1024 * 1024;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    mkdirSync(this.#cacheDir, { recursive: true });
  }

  fetch(url: string): Promise<FetchedAudio> {
    const key = createHash('sha256').update(url).digest('hex').slice(0, 32);
    const running = this.#inFlight.get(key);
    if (running) return running;
    const job = this.#produce(url, join(this.#cacheDir, `${key}.wav`)).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, job);
    return job;
  }

  async #produce(url: string, path: string): Promise<FetchedAudio> {
    if (existsSync(path)) return { path, seconds: await seconds(path), cached: true };
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new MediaError('MEDIA_FETCH_FAILED', `not a URL: ${url}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new MediaError('MEDIA_FETCH_FAILED', `unsupported scheme ${parsed.protocol}`);
    }
    const { body, type } = await this.#download(parsed);
    const src = `${path}.${process.pid}.src.${type}`;
    const tmp = `${path}.${process.pid}.tmp.wav`;
    try {
      await writeFile(src, body);
      try {
        await runTool('sox', [src, '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', tmp], {
          timeoutMs: 30_000,
        });
      } catch (err) {
        throw new MediaError('MEDIA_DECODE_FAILED', `cannot decode audio from ${url}: ${(err as Error).message}`, err);
      }
      await rename(tmp, path);
    } finally {
      await rm(src, { force: true });
      await rm(tmp, { force: true });
    }
    return { path, seconds: await seconds(path), cached: false };
  }

  async #download(url: URL): Promise<{ body: Buffer; type: string }> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, { signal, redirect: 'follow' });
    } catch (err) {
      throw new MediaError('MEDIA_FETCH_FAILED', `fetching ${url.href} failed: ${(err as Error).message}`, err);
    }
    if (!response.ok || !response.body) {
      throw new MediaError('MEDIA_FETCH_FAILED', `fetching ${url.href} answered ${response.status}`);
    }
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > this.#maxBytes) {
      await response.body.cancel();
      throw new MediaError('MEDIA_FETCH_FAILED', `audio at ${url.href} is larger than ${this.#maxBytes} bytes`);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value: chunk } = await reader.read();
        if (done) break;
        total += chunk.length;
        if (total > this.#maxBytes) {
          await reader.cancel();
          throw new MediaError('MEDIA_FETCH_FAILED', `audio at ${url.href} is larger than ${this.#maxBytes} bytes`);
        }
        chunks.push(Buffer.from(chunk));
      }
    } catch (err) {
      if (err instanceof MediaError) throw err;
      throw new MediaError('MEDIA_FETCH_FAILED', `reading ${url.href} failed: ${(err as Error).message}`, err);
    }
    const mime = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const fromPath = extname(url.pathname).slice(1).toLowerCase();
    const type = TYPE_BY_MIME[mime] ?? (/^[a-z0-9]{2,5}$/.test(fromPath) ? fromPath : 'wav');
    return { body: Buffer.concat(chunks), type };
  }
}

async function seconds(path: string): Promise<number> {
  const audio = await readWav(path);
  return audio.samples.length / audio.channels / audio.sampleRate;
}
