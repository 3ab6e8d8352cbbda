import { nationalForm, normalise, NumberFormatError } from './normalise.js';

/** Emergency short codes every phone may dial whatever the account's state (the EU's, the UK's and NANP's). */
export const BUILT_IN_EMERGENCY_NUMBERS: readonly string[] = ['112', '999', '911'];

/** Service-assigned extensions are short digit strings (1001 upwards). */
const EXTENSION = /^\d{2,6}$/;
const SEPARATORS = /[\s\-.()/]/g;

/** What a phone dialled, once read: an emergency call, an on-net extension, or a PSTN number in E.164. */
export type Dialled =
  { kind: 'emergency'; number: string } | { kind: 'extension'; extension: string } | { kind: 'number'; e164: string };

export interface DialPlan {
  /** The account's country (ISO 3166-1 alpha-2), for national forms. */
  country: string;
  /** Extra emergency numbers of this platform, on top of BUILT_IN_EMERGENCY_NUMBERS. */
  emergencyNumbers?: readonly string[];
}

/** True when `dialled` (separators allowed) is one of the emergency numbers. */
export function isEmergencyNumber(dialled: string, extra: readonly string[] = []): boolean {
  const compact = dialled.replace(SEPARATORS, '');
  return BUILT_IN_EMERGENCY_NUMBERS.includes(compact) || extra.includes(compact);
}

/**
 * Reads the user part a phone dialled. Emergency numbers come first, so `112` is never taken for an extension;
 * then short digit strings are extensions; anything else is normalised to E.164 for the account's country, or
 * refused with the NumberFormatError that says why.
 */
export function classifyDialled(dialled: string, plan: DialPlan): Dialled {
  const text = dialled.trim();
  const compact = text.replace(SEPARATORS, '');
  if (isEmergencyNumber(compact, plan.emergencyNumbers)) return { kind: 'emergency', number: compact };
  if (EXTENSION.test(compact)) return { kind: 'extension', extension: compact };
  return { kind: 'number', e164: normalise(text, plan.country) };
}

/**
 * How a trunk wants numbers in its Request-URI (`simu trunks add --number-format`): `e164` (`+254712345678`, the
 * default), `national` (`0712345678`), or `prefix:<tech prefix>` (the prefix, then the E.164 digits without `+`:
 * `prefix:9#` gives `9#254712345678`).
 */
export type TrunkNumberFormat = string;
const TECH_PREFIX = /^prefix:([0-9#*]{1,16})$/;

/** Throws a NumberFormatError when `format` is none of the forms above (checked when a trunk is added). */
export function checkTrunkNumberFormat(format: string): void {
  if (format === 'e164' || format === 'national' || TECH_PREFIX.test(format)) return;
  throw new NumberFormatError(
    'NUMBER_INVALID',
    `"${format}" is not a number format: use e164, national or prefix:<digits, # or *>.`,
  );
}

/** An E.164 number as a trunk of that format wants it; emergency short codes and non-E.164 text pass unchanged. */
export function numberForTrunk(number: string, format: TrunkNumberFormat | null | undefined): string {
  if (!number.startsWith('+') || !format || format === 'e164') return number;
  if (format === 'national') return nationalOrSame(number);
  const m = TECH_PREFIX.exec(format);
  return m ? `${m[1]}${number.slice(1)}` : number;
}

function nationalOrSame(e164: string): string {
  try {
    return nationalForm(e164);
  } catch {
    return e164;
  }
}
