import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MediaError } from './errors.js';
import { runTool } from './run-tool.js';
import { readWavHeader } from './wav.js';

/**
 * Text to speech behind one interface, so a cloud engine can be added later as another tier. Every engine
 * produces what rtpengine plays best: an 8 kHz mono 16-bit WAV, cached on disk by (text, voice, tier) so a
 * prompt repeated across calls is synthesised once. `seconds` is the length of the audio, billed as tts_seconds.
 */
export interface TtsRequest {
  text: string;
  /** TwiML-like `voice`: "man", "woman", "alice" (or absent). */
  voice?: string;
  /** TwiML-like `language`: a BCP 47 tag such as "en-US", "fr-FR", "sw". */
  language?: string;
}

export interface TtsResult {
  path: string;
  seconds: number;
  tier: string;
  /** The engine's own voice name, e.g. "en-us+f3". */
  engineVoice: string;
  cached: boolean;
}

export interface TtsEngine {
  readonly tier: string;
  synthesize(request: TtsRequest): Promise<TtsResult>;
}

/** TwiML voice names onto espeak-ng variants (`espeak-ng --voices=variant`). */
const VOICE_VARIANTS = new Map([
  ['man', 'm3'],
  ['woman', 'f3'],
  ['alice', 'f2'],
]); // a Map: a voice named "constructor" must not find Object.prototype's
const MAX_TEXT = 4000;

export class EspeakTtsEngine implements TtsEngine {
  readonly tier = 'espeak';
  readonly #cacheDir: string;
  readonly #defaultLanguage: string;
  readonly #inFlight = new Map<string, Promise<TtsResult>>();
  #languages: Promise<Set<string>> | undefined;

  constructor(opts: { cacheDir: string; defaultLanguage?: string }) {
    this.#cacheDir = opts.cacheDir;
    this.#defaultLanguage = opts.defaultLanguage ?? 'en-us';
    mkdirSync(this.#cacheDir, { recursive: true });
  }

  /** The languages the installed espeak-ng has, lower case ("en-us", "fr-fr", "sw", ...). */
  #installedLanguages(): Promise<Set<string>> {
    this.#languages ??= runTool('espeak-ng', ['--voices']).then((out) => {
      const set = new Set<string>();
      for (const line of out.toString().split('\n').slice(1)) {
        const lang = line.trim().split(/\s+/)[1];
        if (lang) set.add(lang.toLowerCase());
      }
      return set;
    });
    return this.#languages;
  }

  /** "en-US" + "woman" -> "en-us+f3". An exact language tag wins, then its primary subtag ("es-MX" -> "es"). */
  async resolveVoice(language: string | undefined, voice: string | undefined): Promise<string> {
    const installed = await this.#installedLanguages();
    const tag = (language ?? this.#defaultLanguage).trim().toLowerCase().replace(/_/g, '-');
    const primary = tag.split('-')[0] ?? '';
    const lang = installed.has(tag) ? tag : installed.has(primary) ? primary : undefined;
    if (!lang) throw new MediaError('MEDIA_UNSUPPORTED_VOICE', `language "${language}" is not supported by espeak-ng`);
    if (voice === undefined || voice === '') return lang;
    const variant = VOICE_VARIANTS.get(voice.toLowerCase());
    if (!variant) {
      throw new MediaError('MEDIA_UNSUPPORTED_VOICE', `voice "${voice}" is not supported (man, woman, alice)`);
    }
    return `${lang}+${variant}`;
  }

  async synthesize(request: TtsRequest): Promise<TtsResult> {
    const text = request.text.trim();
    if (text === '') throw new MediaError('MEDIA_TTS_FAILED', 'nothing to say');
    if (text.length > MAX_TEXT) throw new MediaError('MEDIA_TTS_FAILED', `text longer than ${MAX_TEXT} characters`);
    const engineVoice = await this.resolveVoice(request.language, request.voice);
    const key = createHash('sha256').update(`${this.tier}\0${engineVoice}\0${text}`).digest('hex').slice(0, 32);
    const path = join(this.#cacheDir, `${key}.wav`);
    const running = this.#inFlight.get(key);
    if (running) return running;
    const job = this.#produce(text, engineVoice, path).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, job);
    return job;
  }

  async #produce(text: string, engineVoice: string, path: string): Promise<TtsResult> {
    if (existsSync(path)) {
      const { seconds } = await readWavHeader(path);
      return { path, seconds, tier: this.tier, engineVoice, cached: true };
    }
    const raw = `${path}.${process.pid}.raw.wav`;
    const tmp = `${path}.${process.pid}.tmp.wav`;
    try {
      // Text on stdin, never as an argument: it may start with "-" and may be long.
      await runTool('espeak-ng', ['-v', engineVoice, '-w', raw, '--stdin'], { input: text, timeoutMs: 30_000 });
      // Our own file names, types given (`-t`): sox guesses nothing from a name (see asset-import.ts).
      await runTool(
        'sox',
        ['--no-glob', '-t', 'wav', raw, '-t', 'wav', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', tmp],
        { timeoutMs: 30_000 },
      );
      await rename(tmp, path); // atomic: a reader never sees half a file
    } catch (err) {
      throw new MediaError('MEDIA_TTS_FAILED', `speech synthesis failed: ${(err as Error).message}`, err);
    } finally {
      await rm(raw, { force: true });
      await rm(tmp, { force: true });
    }
    const { seconds } = await readWavHeader(path);
    return { path, seconds, tier: this.tier, engineVoice, cached: false };
  }
}
