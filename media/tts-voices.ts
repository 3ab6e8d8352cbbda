/**
 * TwiML voice names onto espeak-ng voices. A TwiML developer names a voice of the platform it was written for:
 * `man`, `woman`, `alice` (Twilio's basic voices), `Polly.<Name>` (Amazon Polly, optionally `-Neural` or
 * `-Generative`) or `Google.<lang>-<model>-<letter>`. Each is read as what it says about the speaker, a language
 * and a gender, and spoken by the nearest espeak-ng voice: that language (or the `language` attribute, which
 * says what the text is in) with a female or male variant (`espeak-ng --voices=variant`).
 */

export type VoiceGender = 'female' | 'male';

/** What a TwiML voice name tells: a gender, and the language of voices that speak only one. */
export interface VoiceTraits {
  readonly gender?: VoiceGender;
  /** A BCP 47 tag, e.g. "en-GB". */
  readonly language?: string;
  /** An espeak-ng variant other than the gender's usual one (alice keeps the voice it always had). */
  readonly variant?: string;
}

/** espeak-ng variants for each gender: f3 and m3 read most clearly at 8 kHz. */
export const GENDER_VARIANTS: Readonly<Record<VoiceGender, string>> = { female: 'f3', male: 'm3' };

/** Amazon Polly's voices (as Twilio offers them): language and gender. */
const POLLY: ReadonlyArray<readonly [string, string, VoiceGender]> = [
  ['en-US', 'Joanna Salli Kimberly Kendra Ivy Ruth Danielle', 'female'],
  ['en-US', 'Matthew Joey Justin Kevin Stephen Gregory Patrick', 'male'],
  ['en-GB', 'Amy Emma', 'female'],
  ['en-GB', 'Brian Arthur', 'male'],
  ['en-AU', 'Nicole Olivia', 'female'],
  ['en-AU', 'Russell', 'male'],
  ['en-IN', 'Aditi Raveena Kajal', 'female'],
  ['en-NZ', 'Aria', 'female'],
  ['en-ZA', 'Ayanda', 'female'],
  ['en-IE', 'Niamh', 'female'],
  ['en-SG', 'Jasmine', 'female'],
  ['en-GB-WLS', 'Geraint', 'male'],
  ['cy-GB', 'Gwyneth', 'female'],
  ['es-ES', 'Conchita Lucia', 'female'],
  ['es-ES', 'Enrique Sergio', 'male'],
  ['es-MX', 'Mia', 'female'],
  ['es-MX', 'Andres', 'male'],
  ['es-US', 'Penelope Lupe', 'female'],
  ['es-US', 'Miguel Pedro', 'male'],
  ['fr-FR', 'Celine Céline Lea Léa', 'female'],
  ['fr-FR', 'Mathieu Remi Rémi', 'male'],
  ['fr-CA', 'Chantal Gabrielle', 'female'],
  ['fr-CA', 'Liam', 'male'],
  ['de-DE', 'Marlene Vicki', 'female'],
  ['de-DE', 'Hans Daniel', 'male'],
  ['de-AT', 'Hannah', 'female'],
  ['de-CH', 'Sabrina', 'female'],
  ['it-IT', 'Carla Bianca', 'female'],
  ['it-IT', 'Giorgio Adriano', 'male'],
  ['pt-BR', 'Vitoria Vitória Camila', 'female'],
  ['pt-BR', 'Ricardo Thiago', 'male'],
  ['pt-PT', 'Ines Inês', 'female'],
  ['pt-PT', 'Cristiano', 'male'],
  ['nl-NL', 'Lotte Laura', 'female'],
  ['nl-NL', 'Ruben', 'male'],
  ['nl-BE', 'Lisa', 'female'],
  ['da-DK', 'Naja Sofie', 'female'],
  ['da-DK', 'Mads', 'male'],
  ['nb-NO', 'Liv Ida', 'female'],
  ['sv-SE', 'Astrid Elin', 'female'],
  ['fi-FI', 'Suvi', 'female'],
  ['is-IS', 'Dora Dóra', 'female'],
  ['is-IS', 'Karl', 'male'],
  ['pl-PL', 'Ewa Maja Ola', 'female'],
  ['pl-PL', 'Jacek Jan', 'male'],
  ['ro-RO', 'Carmen', 'female'],
  ['ru-RU', 'Tatyana', 'female'],
  ['ru-RU', 'Maxim', 'male'],
  ['tr-TR', 'Filiz Burcu', 'female'],
  ['cs-CZ', 'Jitka', 'female'],
  ['ca-ES', 'Arlet', 'female'],
  ['hi-IN', 'Kajal', 'female'],
  ['ar', 'Zeina Hala', 'female'],
  ['ar', 'Zayd', 'male'],
  ['ja-JP', 'Mizuki Kazuha Tomoko', 'female'],
  ['ja-JP', 'Takumi', 'male'],
  ['ko-KR', 'Seoyeon Jihye', 'female'],
  ['cmn-CN', 'Zhiyu', 'female'],
  ['yue-CN', 'Hiujin', 'female'],
];

/** Voice name (lower case) -> traits; a Map, so that a name like "constructor" finds nothing inherited. */
const NAMED = new Map<string, VoiceTraits>([
  ['man', { gender: 'male' }],
  ['woman', { gender: 'female' }],
  ['alice', { gender: 'female', variant: 'f2' }],
]);
for (const [language, names, gender] of POLLY)
  for (const name of names.split(' ')) NAMED.set(`polly.${name.toLowerCase()}`, { language, gender });

/** Google's en-US Standard/Wavenet/Neural2 letters whose gender is known; other Google voices give a language only. */
const GOOGLE_EN_US_FEMALE = new Set('CEFGH');
const GOOGLE_EN_US_MALE = new Set('ABDIJ');

/** `Google.fr-FR-Wavenet-A`: the language from the name, and a gender where the letter is known. */
function googleTraits(rest: string): VoiceTraits | undefined {
  const m = /^([a-z]{2,3}-[a-z]{2})-[a-z0-9]+-([a-z])$/i.exec(rest);
  if (!m) return undefined;
  const language = m[1]!;
  const letter = m[2]!.toUpperCase();
  if (language.toLowerCase() !== 'en-us') return { language };
  if (GOOGLE_EN_US_FEMALE.has(letter)) return { language, gender: 'female' };
  if (GOOGLE_EN_US_MALE.has(letter)) return { language, gender: 'male' };
  return { language };
}

/** What a TwiML voice name says about its speaker, or undefined for a name this table does not know. */
export function voiceTraits(voice: string): VoiceTraits | undefined {
  const name = voice.trim().toLowerCase();
  const named = NAMED.get(name.replace(/-(neural|generative|standard|long-form)$/, ''));
  if (named) return named;
  if (name.startsWith('google.')) return googleTraits(voice.trim().slice('google.'.length));
  return undefined;
}

/** Languages whose bare or regional tag espeak-ng spells otherwise ("en" has only en-us, en-gb, ...). */
const LANGUAGE_ALIASES = new Map([
  ['en', 'en-us'],
  ['fr', 'fr-fr'],
  ['zh', 'cmn'],
  ['zh-cn', 'cmn'],
  ['zh-tw', 'cmn'],
  ['zh-hk', 'yue'],
  ['arb', 'ar'],
  ['no', 'nb'],
  ['iw', 'he'],
]);

/**
 * The installed espeak-ng language nearest a BCP 47 tag: the tag itself, then each shorter prefix ("en-GB-WLS" ->
 * "en-gb"), then an alias ("en" -> "en-us"), then any installed regional form of its primary subtag. Undefined
 * when espeak-ng has nothing of the language.
 */
export function nearestLanguage(tag: string, installed: ReadonlySet<string>): string | undefined {
  const parts = tag.trim().toLowerCase().replace(/_/g, '-').split('-');
  for (let n = parts.length; n > 0; n--) {
    const prefix = parts.slice(0, n).join('-');
    if (installed.has(prefix)) return prefix;
    const alias = LANGUAGE_ALIASES.get(prefix);
    if (alias !== undefined && installed.has(alias)) return alias;
  }
  const primary = parts[0] ?? '';
  if (primary === '') return undefined;
  for (const lang of installed) if (lang.startsWith(`${primary}-`)) return lang;
  return undefined;
}
