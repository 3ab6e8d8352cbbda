import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MediaError } from './errors.js';
import { runTool } from './run-tool.js';
import { GENDER_VARIANTS, nearestLanguage, voiceTraits } from './tts-voices.js';
import { readWavHeader } from './wav.js';

/**
 * Text to speech behind one interface, so a cloud engine can be added later as another tier. Every engine
 * produces what rtpengine plays best: an 8 kHz mono 16-bit WAV, cached on disk by (text, voice, tier) so a
 * prompt repeated across calls is synthesised once. `seconds` is the length of the audio, billed as tts_seconds.
 */
export interface TtsRequest {
  text: string;
  /**
   * `text` is SSML (espeak-ng's `-m`), built from the elements SSML_ELEMENTS names only (verbs/ssml.ts does):
   * espeak-ng obeys some other elements (audio reads a file, and crashes on one it cannot) so no other tag may
   * reach it.
   */
  ssml?: boolean;
  /** TwiML `voice`: man, woman, alice, Polly.*, Google.* (tts-voices.ts); any other name: the default voice. */
  voice?: string;
  /** TwiML-like `language`: a BCP 47 tag such as "en-US", "fr-FR", "sw". */
  language?: string;
}

/** A voice or language asked for that espeak-ng has nothing near: the default was spoken instead. */
export interface TtsSubstitution {
  readonly attribute: 'voice' | 'language';
  readonly value: string;
}

export interface TtsResult {
  path: string;
  seconds: number;
  tier: string;
  /** The engine's own voice name, e.g. "en-us+f3". */
  engineVoice: string;
  cached: boolean;
  /** What was asked for and not had (spoken with the default instead); empty when everything was. */
  substituted: readonly TtsSubstitution[];
}

export interface TtsEngine {
  readonly tier: string;
  synthesize(request: TtsRequest): Promise<TtsResult>;
}

/** The engine voice for a request, and what of the request it could not honour. */
export interface VoiceChoice {
  readonly engineVoice: string;
  readonly substituted: readonly TtsSubstitution[];
}

/** Longest text spoken, in characters (TwiML's limit for one Say; verbs/parse.ts refuses longer ones first). */
export const MAX_TTS_TEXT = 4096;
/** Longest SSML spoken, in characters: the text's limit and room for its markup (verbs/ssml.ts keeps within it). */
export const MAX_TTS_SSML = 16384;
/** The only SSML elements espeak-ng is handed. */
export const SSML_ELEMENTS: ReadonlySet<string> = new Set([
  'speak',
  'break',
  'emphasis',
  'prosody',
  'say-as',
  'p',
  's',
  'sub',
  'voice',
]);

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

  /**
   * "en-US" + "woman" -> "en-us+f3"; "Polly.Joanna" -> "en-us+f3". The `language` attribute wins (it says what the
   * text is in), then the voice's own language, then the default; a language espeak-ng lacks and a voice name
   * tts-voices.ts does not know are spoken with the default and listed in `substituted`. Never throws for a name.
   */
  async resolveVoice(language: string | undefined, voice: string | undefined): Promise<VoiceChoice> {
    const installed = await this.#installedLanguages();
    const substituted: TtsSubstitution[] = [];
    const name = voice?.trim() ?? '';
    const traits = name === '' ? {} : voiceTraits(name);
    if (traits === undefined) substituted.push({ attribute: 'voice', value: name });
    const asked = language?.trim() ?? '';
    let lang = asked === '' ? undefined : nearestLanguage(asked, installed);
    if (asked !== '' && lang === undefined) substituted.push({ attribute: 'language', value: asked });
    if (lang === undefined && traits?.language !== undefined) lang = nearestLanguage(traits.language, installed);
    lang ??= nearestLanguage(this.#defaultLanguage, installed);
    if (lang === undefined) {
      // The switch's own default is not installed: a broken installation, not the customer's input.
      throw new MediaError('MEDIA_TTS_FAILED', `espeak-ng has no voice for "${this.#defaultLanguage}"`);
    }
    const variant = traits?.variant ?? (traits?.gender === undefined ? undefined : GENDER_VARIANTS[traits.gender]);
    return { engineVoice: variant === undefined ? lang : `${lang}+${variant}`, substituted };
  }

  async synthesize(request: TtsRequest): Promise<TtsResult> {
    const text = request.text.trim();
    const ssml = request.ssml === true;
    if (text === '') throw new MediaError('MEDIA_TTS_FAILED', 'nothing to say');
    const limit = ssml ? MAX_TTS_SSML : MAX_TTS_TEXT;
    if (text.length > limit) throw new MediaError('MEDIA_TTS_FAILED', `text longer than ${limit} characters`);
    if (ssml) assertOwnSsml(text);
    const { engineVoice, substituted } = await this.resolveVoice(request.language, request.voice);
    const mode = ssml ? 'ssml' : 'text';
    const key = createHash('sha256')
      .update(`${this.tier}\0${engineVoice}\0${mode}\0${text}`)
      .digest('hex')
      .slice(0, 32);
    const path = join(this.#cacheDir, `${key}.wav`);
    const running = this.#inFlight.get(key);
    const job = running ?? this.#produce(text, ssml, engineVoice, path).finally(() => this.#inFlight.delete(key));
    if (!running) this.#inFlight.set(key, job);
    const result = await job;
    return { ...result, substituted };
  }

  async #produce(text: string, ssml: boolean, engineVoice: string, path: string): Promise<TtsResult> {
    if (existsSync(path)) {
      const { seconds } = await readWavHeader(path);
      return { path, seconds, tier: this.tier, engineVoice, cached: true, substituted: [] };
    }
    const raw = `${path}.${process.pid}.raw.wav`;
    const tmp = `${path}.${process.pid}.tmp.wav`;
    try {
      // Text on stdin, never as an argument: it may start with "-" and may be long. Markup is read only as asked.
      const args = ['-v', engineVoice, ...(ssml ? ['-m'] : []), '-w', raw, '--stdin'];
      await runTool('espeak-ng', args, { input: text, timeoutMs: 30_000 });
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
    return { path, seconds, tier: this.tier, engineVoice, cached: false, substituted: [] };
  }
}

/** SSML handed to espeak-ng names only SSML_ELEMENTS: a second wall behind verbs/ssml.ts, which builds it. */
function assertOwnSsml(markup: string): void {
  for (const m of markup.matchAll(/<\/?\s*([^\s/>]*)/g)) {
    if (!SSML_ELEMENTS.has(m[1]!)) throw new MediaError('MEDIA_TTS_FAILED', `SSML element <${m[1]}> is not spoken`);
  }
}
