import { DEFAULT_COUNTRY } from '../../config/index.js';
import { normalise, NumberFormatError, type NumberErrorCode } from '../../numbers/index.js';
import { getAccountSettings } from '../../store/index.js';
import type { FlowDeps } from './flow-deps.js';

/** The country an account's national numbers are read with: its own, else numbers.defaultCountry. */
export async function accountCountry(d: FlowDeps, accountId: string): Promise<string> {
  const account = await getAccountSettings(d.db, accountId);
  return account.country ?? d.config.numbers?.defaultCountry ?? DEFAULT_COUNTRY;
}

/** A number a verb document gave (Dial), in E.164 for the account's country, or the reason it is none. */
export async function e164ForAccount(
  d: FlowDeps,
  accountId: string,
  written: string,
): Promise<{ ok: true; e164: string } | { ok: false; code: NumberErrorCode }> {
  try {
    return { ok: true, e164: normalise(written, await accountCountry(d, accountId)) };
  } catch (e) {
    if (e instanceof NumberFormatError) return { ok: false, code: e.code };
    throw e;
  }
}
