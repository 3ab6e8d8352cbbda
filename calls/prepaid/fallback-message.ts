import type { FallbackPolicy } from '../../verbs/index.js';
import { notice, noticeLanguageOf } from '../../media/index.js';
import type { AccountSettings } from '../../store/index.js';

/**
 * The account's fallback as the interpreter runs it (spec, "Fallback"), spoken in the account's language:
 * `message` with no text of the account's own says the switch's default notice (media/notices.ts,
 * fallbackMessage) rather than nothing; an account's own text is spoken in its language's voice.
 */
export function fallbackPolicyOf(
  account: Pick<AccountSettings, 'fallback_mode' | 'fallback_value' | 'language'>,
): FallbackPolicy {
  const lang = noticeLanguageOf(account.language);
  if (account.fallback_mode !== 'message') return { mode: account.fallback_mode, value: account.fallback_value };
  if (account.fallback_value.trim() !== '')
    return { mode: 'message', value: account.fallback_value, language: notice('fallbackMessage', lang).language };
  const n = notice('fallbackMessage', lang);
  return { mode: 'message', value: n.text, language: n.language };
}
