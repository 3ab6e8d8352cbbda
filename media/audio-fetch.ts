import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { convertToPlaybackWav } from './asset-import.js';
import { MediaError } from './errors.js';
import { UrlPolicy, createGuardedFetch } from '../kit/index.js';
import { readWavHeader } from './wav.js';

/**
 * Audio named by URL (Play with a URL, fallback prompts), fetched with size and time limits, converted by sox to
 * an 8 kHz mono WAV (at most MAX_PLAYBACK_SECONDS) and cached by URL. A fetch problem is MEDIA_FETCH_FAILED; a body
 * that is not WAV, AU, AIFF, FLAC, Ogg or MP3 by its own first bytes (a playlist, a web page), or that sox cannot
 * decode, is MEDIA_DECODE_FAILED, so a verb can turn either into PLAY.0404 or a fallback. The URL's path and the
 * response's Content-Type choose nothing: the body is written to a file named by the cache key alone.
 */
export interface FetchedAudio {
  path: string;
  seconds: number;
  cached: boolean;
}

export class AudioFetcher {
  readonly #cacheDir: string;
  readonly #maxBytes: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #inFlight = new Map<string, Promise<FetchedAudio>>();

  /**
   * `urlPolicy`: where audio URLs may point (SSRF): each hop of a download, redirects included, is
   * resolved and checked before connecting. Default: public destinations only.
   */
  constructor(opts: { cacheDir: string; maxBytes?: number; timeoutMs?: number; urlPolicy?: UrlPolicy }) {
    this.#cacheDir = opts.cacheDir;
    this.#maxBytes = opts.maxBytes ?? 20 * 1024 * 1024;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#fetch = createGuardedFetch({ policy: opts.urlPolicy ?? UrlPolicy.strict });
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
    if (existsSync(path)) return { path, seconds: (await readWavHeader(path)).seconds, cached: true };
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new MediaError('MEDIA_FETCH_FAILED', `not a URL: ${url}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new MediaError('MEDIA_FETCH_FAILED', `unsupported scheme ${parsed.protocol}`);
    }
    const { body } = await this.#download(parsed);
    // Named by us (cache key, pid): no part of the URL reaches sox, so no ".m3u"/".pls" playlist and no URL.
    const src = `${path}.${process.pid}.src`;
    try {
      await writeFile(src, body);
      const converted = await convertToPlaybackWav(src, path).catch((err: unknown) => {
        if (!(err instanceof MediaError)) throw err;
        throw new MediaError('MEDIA_DECODE_FAILED', `cannot play audio from ${url}: ${err.message}`, err);
      });
      return { path, seconds: converted.durationSeconds, cached: false };
    } finally {
      await rm(src, { force: true });
    }
  }

  /** The body only: what it is gets decided from its bytes (convertToPlaybackWav), not from the URL or MIME type. */
  async #download(url: URL): Promise<{ body: Buffer }> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let response: Response;
    try {
      response = await this.#fetch(url, { signal, redirect: 'follow' });
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
    return { body: Buffer.concat(chunks) };
  }
}
