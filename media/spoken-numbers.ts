/**
 * Numbers and amounts in words, as a speaker of the language says them, for the notices the switch speaks
 * (media/notices.ts). Integers only (money is cents: STYLE.md 8).
 *
 * Swahili: units moja .. tisa, tens kumi .. tisini, `mia` (hundred), `elfu` (thousand), `laki` (hundred
 * thousand), `milioni`; the multiplier follows its noun ("mia mbili", "elfu moja"). Groups follow one another
 * without a conjunction ("elfu moja mia mbili"); `na` joins units to tens ("ishirini na tano") and a last part
 * below a hundred that is one word to what precedes it ("mia moja na tano", "elfu mbili na hamsini"). An amount is
 * "shilingi ..." then "na senti ..." ("shilingi elfu moja mia mbili na senti hamsini").
 */

const SW_UNITS = ['', 'moja', 'mbili', 'tatu', 'nne', 'tano', 'sita', 'saba', 'nane', 'tisa'];
const SW_TENS = [
  '',
  'kumi',
  'ishirini',
  'thelathini',
  'arobaini',
  'hamsini',
  'sitini',
  'sabini',
  'themanini',
  'tisini',
];

function swBelowHundred(n: number): string {
  const t = Math.floor(n / 10);
  const u = n % 10;
  if (t === 0) return SW_UNITS[u]!;
  return u === 0 ? SW_TENS[t]! : `${SW_TENS[t]} na ${SW_UNITS[u]}`;
}

/** 0 .. 999,999,999 in Swahili words ("sifuri" for 0). */
export function swahiliNumber(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > 999_999_999) throw new RangeError(`not a number to say: ${n}`);
  if (n === 0) return 'sifuri';
  const parts: string[] = [];
  const millions = Math.floor(n / 1_000_000);
  const lakhs = Math.floor((n % 1_000_000) / 100_000);
  const thousands = Math.floor((n % 100_000) / 1000);
  const hundreds = Math.floor((n % 1000) / 100);
  const rest = n % 100;
  if (millions) parts.push(`milioni ${swahiliNumber(millions)}`);
  if (lakhs) parts.push(`laki ${SW_UNITS[lakhs]}`);
  if (thousands) parts.push(`elfu ${swBelowHundred(thousands)}`);
  if (hundreds) parts.push(`mia ${SW_UNITS[hundreds]}`);
  if (rest) {
    const words = swBelowHundred(rest);
    // "mia moja na tano", but "mia moja ishirini na tano" (the tens already carry their `na`).
    parts.push(parts.length && !words.includes(' na ') ? `na ${words}` : words);
  }
  return parts.join(' ');
}

const EN_SMALL = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const EN_TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

function enBelowThousand(n: number): string {
  const parts: string[] = [];
  const h = Math.floor(n / 100);
  const r = n % 100;
  if (h) parts.push(`${EN_SMALL[h]} hundred`);
  if (r) {
    const words = r < 20 ? EN_SMALL[r]! : EN_TENS[Math.floor(r / 10)]! + (r % 10 ? `-${EN_SMALL[r % 10]}` : '');
    parts.push(h ? `and ${words}` : words);
  }
  return parts.join(' ');
}

/** 0 .. 999,999,999 in English words ("one thousand two hundred", "one hundred and five"). */
export function englishNumber(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > 999_999_999) throw new RangeError(`not a number to say: ${n}`);
  if (n === 0) return 'zero';
  const parts: string[] = [];
  const millions = Math.floor(n / 1_000_000);
  const thousands = Math.floor((n % 1_000_000) / 1000);
  const rest = n % 1000;
  if (millions) parts.push(`${enBelowThousand(millions)} million`);
  if (thousands) parts.push(`${enBelowThousand(thousands)} thousand`);
  if (rest) parts.push(rest < 100 && parts.length ? `and ${enBelowThousand(rest)}` : enBelowThousand(rest));
  return parts.join(' ');
}

export type NoticeLanguage = 'en' | 'sw';

/** Cents of KES in words: "one thousand two hundred shillings and fifty cents", "shilingi elfu moja mia mbili". */
export function spokenAmount(cents: number, lang: NoticeLanguage): string {
  if (!Number.isInteger(cents)) throw new RangeError(`not an amount in cents: ${cents}`);
  const abs = Math.abs(cents);
  const shillings = Math.floor(abs / 100);
  const c = abs % 100;
  if (lang === 'sw') {
    const minus = cents < 0 ? 'hasi ' : '';
    if (shillings === 0 && c > 0) return `${minus}senti ${swahiliNumber(c)}`;
    return `${minus}shilingi ${swahiliNumber(shillings)}${c ? ` na senti ${swahiliNumber(c)}` : ''}`;
  }
  const minus = cents < 0 ? 'minus ' : '';
  const sh = `${englishNumber(shillings)} ${shillings === 1 ? 'shilling' : 'shillings'}`;
  const ct = `${englishNumber(c)} ${c === 1 ? 'cent' : 'cents'}`;
  if (shillings === 0 && c > 0) return `${minus}${ct}`;
  return `${minus}${sh}${c ? ` and ${ct}` : ''}`;
}
