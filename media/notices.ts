import { englishNumber, spokenAmount, swahiliNumber, type NoticeLanguage } from './spoken-numbers.js';

/**
 * Every sentence the switch itself speaks, in English and Swahili: one reviewed table, so a
 * translator reads all of it in one place and a test checks both languages have every entry. Customers' own
 * documents speak what they wrote (`<Say language="sw-KE">` picks the Swahili voice); these are the switch's own
 * words, spoken in the account's language (`accounts.language`).
 *
 * Writing rules, kept by the reviewers: short sentences a caller understands once; numbers and amounts in words as
 * speakers of the language say them (spoken-numbers.ts); Swahili in the standard (Kiswahili sanifu) form used in
 * Kenyan and Tanzanian telephone announcements, polite (Samahani, Tafadhali), the noun-class agreement right
 * (dakika, sekunde and simu are N-class: "imebaki dakika moja", "zimebaki sekunde thelathini").
 */

export type { NoticeLanguage } from './spoken-numbers.js';
export const NOTICE_LANGUAGES: readonly NoticeLanguage[] = ['en', 'sw'];

/** The espeak-ng voice of each language (media/tts.ts takes it as the TTS language). */
export const NOTICE_VOICE: Record<NoticeLanguage, string> = { en: 'en-us', sw: 'sw' };

/** The arguments of the notices that take any. */
export interface NoticeArgs {
  /** Seconds left before a prepaid call is cut (creditWarning). */
  seconds?: number;
  /** KES cents (balance). */
  cents?: number;
  /** Counts (voicemail). */
  count?: number;
  fresh?: number;
  saved?: number;
  /** Keys to press (voicemail: delete, keep). */
  key?: string;
  keepKey?: string;
  /** Who the caller wanted (voicemail greeting): a name, or an extension's digits. */
  who?: string;
}

type Sentence = string | ((a: NoticeArgs) => string);

/** How long is left, in words: "one minute", "two minutes", "thirty seconds" / "dakika moja", "sekunde thelathini". */
function timeLeft(seconds: number, lang: NoticeLanguage): { words: string; one: boolean } {
  const s = Math.max(1, Math.round(seconds));
  // Round to whole minutes from a minute up, as a listener hears "one minute" rather than "sixty-two seconds".
  if (s >= 60) {
    const m = Math.round(s / 60);
    return lang === 'sw'
      ? { words: `dakika ${swahiliNumber(m)}`, one: m === 1 }
      : { words: `${englishNumber(m)} ${m === 1 ? 'minute' : 'minutes'}`, one: m === 1 };
  }
  return lang === 'sw'
    ? { words: `sekunde ${swahiliNumber(s)}`, one: s === 1 }
    : { words: `${englishNumber(s)} ${s === 1 ? 'second' : 'seconds'}`, one: s === 1 };
}

const capital = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

export const NOTICES = {
  /** END.0501: a phone dialled out and the account has no voice_outbound webhook (early media, then 403). */
  noOutboundHandler: {
    en: 'This account cannot place outside calls yet. Goodbye.',
    sw: 'Akaunti hii bado haiwezi kupiga simu za nje. Kwaheri.',
  },
  /** The fallback `message` mode with no text of the account's own (WH.0400). */
  fallbackMessage: {
    en: 'We are sorry, this call cannot be completed right now. Please try again later.',
    sw: 'Samahani, simu hii haiwezi kukamilika kwa sasa. Tafadhali jaribu tena baadaye.',
  },
  /** BILL.0311: to the paying leg only, the account's lead time before the cut (BILL.0403). */
  creditWarning: {
    en: (a: NoticeArgs) => `${capital(timeLeft(a.seconds ?? 60, 'en').words)} of talk time left.`,
    sw: (a: NoticeArgs) => {
      const t = timeLeft(a.seconds ?? 60, 'sw');
      return `${t.one ? 'Imebaki' : 'Zimebaki'} ${t.words} ${t.one ? 'ya' : 'za'} mazungumzo.`;
    },
  },
  /** The balance short code (*100#): the account's balance, unbilled. */
  balance: {
    en: (a: NoticeArgs) => `Your balance is ${spokenAmount(a.cents ?? 0, 'en')}.`,
    sw: (a: NoticeArgs) => `Salio lako ni ${spokenAmount(a.cents ?? 0, 'sw')}.`,
  },
  /** The balance short code from a phone the switch cannot tie to an account. */
  balanceUnavailable: {
    en: 'Your balance cannot be read right now. Please try again later.',
    sw: 'Salio lako haliwezi kusomwa kwa sasa. Tafadhali jaribu tena baadaye.',
  },
  // ---- voicemail (engineer C's prompts, calls/voicemail/: their place in the table) ----
  voicemailGreeting: {
    en: (a: NoticeArgs) =>
      `${a.who ?? 'The person you called'} is not available. Please leave a message after the tone. Press pound when you are done.`,
    sw: (a: NoticeArgs) =>
      `${a.who ?? 'Mtu uliyempigia'} hapatikani. Tafadhali acha ujumbe baada ya mlio. Bonyeza alama ya reli ukimaliza.`,
  },
  voicemailThanks: { en: 'Thank you. Goodbye.', sw: 'Asante. Kwaheri.' },
  voicemailSummary: {
    en: (a: NoticeArgs) =>
      `You have ${englishNumber(a.fresh ?? 0)} new ${a.fresh === 1 ? 'message' : 'messages'} and ` +
      `${englishNumber(a.saved ?? 0)} saved ${a.saved === 1 ? 'message' : 'messages'}.`,
    sw: (a: NoticeArgs) =>
      `Una ujumbe mpya ${swahiliNumber(a.fresh ?? 0)} na ujumbe uliohifadhiwa ${swahiliNumber(a.saved ?? 0)}.`,
  },
  voicemailMessageNumber: {
    en: (a: NoticeArgs) => `Message ${englishNumber(a.count ?? 1)}.`,
    sw: (a: NoticeArgs) => `Ujumbe wa ${swahiliNumber(a.count ?? 1)}.`,
  },
  voicemailMessageKeys: {
    en: (a: NoticeArgs) => `Press ${a.key ?? '7'} to delete it, or ${a.keepKey ?? '9'} to keep it.`,
    sw: (a: NoticeArgs) => `Bonyeza ${a.key ?? '7'} kuufuta, au ${a.keepKey ?? '9'} kuuhifadhi.`,
  },
  voicemailDeleted: { en: 'Message deleted.', sw: 'Ujumbe umefutwa.' },
  voicemailNoMore: { en: 'No more messages. Goodbye.', sw: 'Hakuna ujumbe zaidi. Kwaheri.' },
} as const satisfies Record<string, Record<NoticeLanguage, Sentence>>;

export type NoticeKey = keyof typeof NOTICES;

/** `accounts.language` as a notice language: anything but `sw` is English. */
export const noticeLanguageOf = (language: string | null | undefined): NoticeLanguage =>
  language === 'sw' ? 'sw' : 'en';

/** The sentence of `key` in `lang`, with its arguments, and the voice to speak it with. */
export function notice(
  key: NoticeKey,
  lang: NoticeLanguage,
  args: NoticeArgs = {},
): { text: string; language: string } {
  const s: Sentence = NOTICES[key][lang];
  return { text: typeof s === 'function' ? s(args) : s, language: NOTICE_VOICE[lang] };
}
