import { parsePhoneNumberWithError, isSupportedCountry, ParseError, type CountryCode } from 'libphonenumber-js';

/** Why a dialled string is not a routable number; stable codes (they reach API clients as `NUMBER_*`). */
export type NumberErrorCode =
  | 'NUMBER_EMPTY'
  | 'NUMBER_TOO_LONG'
  | 'NUMBER_CHARACTERS'
  | 'NUMBER_SHORT_CODE'
  | 'NUMBER_COUNTRY_CODE'
  | 'NUMBER_INVALID'
  | 'NUMBER_UNKNOWN_COUNTRY';

export class NumberFormatError extends Error {
  constructor(
    readonly code: NumberErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'NumberFormatError';
  }
}

/** Longest dialled string looked at; E.164 is at most 15 digits, the rest is room for separators and prefixes. */
export const MAX_DIALLED_LENGTH = 32;
/** Digit strings this short without a prefix are short codes or extensions, never a subscriber number. */
const SHORT_CODE = /^\d{1,6}$/;
/** What people write between digit groups: `0712 345 678`, `0712-345-678`, `(020) 123.4567`. */
const SEPARATORS = /[\s\-.()/]/g;
const E164_SHAPE = /^\+[1-9]\d{6,14}$/;

export const isSupportedCountryCode = (country: string): boolean => isSupportedCountry(country.toUpperCase());

/**
 * A number as phones, carriers and API clients write it, in E.164 (`+254712345678`), with libphonenumber's metadata
 * for the country's numbering plan: national forms (`0712 345 678`, `020 1234567`, for `country`), international
 * ones (`+254…`, `00254…`, the country's own international prefix such as Kenya's `000`, and the country code
 * written without `+`: `254712345678`). Short codes (at most six digits) and strings that are not a possible
 * number for their country are refused with a NumberFormatError: an emergency number or an extension must be
 * recognised before a number is normalised (see classifyDialled).
 */
export function normalise(input: string, country: string): string {
  // Every call reads its caller, its DID and its dialled numbers: the same few thousand strings, each parse a
  // libphonenumber walk (~50 µs). Readings are kept (refusals are not: they throw, and are rarer).
  const key = typeof input === 'string' && input.length <= MAX_DIALLED_LENGTH ? `${country}\n${input}` : undefined;
  const known = key === undefined ? undefined : readings.get(key);
  if (known !== undefined) return known;
  const e164 = normaliseText(input, country);
  if (key !== undefined) {
    if (readings.size >= READINGS_KEPT) readings.delete(readings.keys().next().value as string);
    readings.set(key, e164);
  }
  return e164;
}

const READINGS_KEPT = 10_000;
/** (country, number as written) -> E.164, oldest first. */
const readings = new Map<string, string>();

function normaliseText(input: string, country: string): string {
  const text = typeof input === 'string' ? input.trim() : '';
  if (text.length === 0) throw new NumberFormatError('NUMBER_EMPTY', 'The number is empty.');
  if (text.length > MAX_DIALLED_LENGTH)
    throw new NumberFormatError('NUMBER_TOO_LONG', `The number is longer than ${MAX_DIALLED_LENGTH} characters.`);
  const compact = text.replace(SEPARATORS, '');
  if (!/^\+?\d+$/.test(compact))
    throw new NumberFormatError('NUMBER_CHARACTERS', `"${text}" holds characters other than digits and a leading +.`);
  if (SHORT_CODE.test(compact))
    throw new NumberFormatError('NUMBER_SHORT_CODE', `"${compact}" is a short code, not a subscriber number.`);
  const cc = country.toUpperCase();
  if (!isSupportedCountry(cc))
    throw new NumberFormatError('NUMBER_UNKNOWN_COUNTRY', `"${country}" is not a country code (ISO 3166-1 alpha-2).`);
  // `00` then a country code is the international prefix of most of the world (ITU-T E.164 recommends it); the
  // metadata knows only each country's own prefix (Kenya's is `000`), so `00` is read as `+` here first. A national
  // number never starts with `00`.
  const written = /^00[1-9]/.test(compact) ? `+${compact.slice(2)}` : compact;
  let parsed;
  try {
    parsed = parsePhoneNumberWithError(written, cc as CountryCode);
  } catch (e) {
    if (e instanceof ParseError && e.message === 'INVALID_COUNTRY')
      throw new NumberFormatError('NUMBER_COUNTRY_CODE', `"${text}" does not start with a known country code.`);
    throw new NumberFormatError('NUMBER_INVALID', `"${text}" is not a phone number.`);
  }
  // A national form is read through the country's plan, so it must be a valid number of it (`0712345` is not);
  // an international one need only be possible (the right length), so ranges newer than the metadata still route.
  const ok = written.startsWith('+') ? parsed.isPossible() : parsed.isValid();
  if (!ok || !E164_SHAPE.test(parsed.number))
    throw new NumberFormatError('NUMBER_INVALID', `"${text}" is not a possible number in ${parsed.country ?? cc}.`);
  return parsed.number;
}

/** The national form of an E.164 number (`+254712345678` -> `0712345678`), digits only, for trunks that want it. */
export function nationalForm(e164: string): string {
  const parsed = parsePhoneNumberWithError(e164);
  return parsed.formatNational().replace(/[^\d]/g, '');
}
