import { notice, noticeLanguageOf } from '../../media/index.js';
import type { EndUserIdentity } from '../../sip/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import { findAccount } from '../../store/index.js';
import { CALLER_LEG } from '../call-media.js';
import { dialsShortCode, runShortCodeCall, type ShortCodeCallDeps } from '../short-code-call.js';

/** True when a phone's Request-URI user part is the balance short code (`*100#`, `*100%23` as phones send it). */
export const isBalanceCode = (user: string | undefined, code: string): boolean => dialsShortCode(user, code, 32);

export type BalanceCallDeps = ShortCodeCallDeps;

/**
 * The balance short code (`prepaid.balanceShortCode`, default `*100#`) from any registered phone:
 * the switch answers, says the account's balance in KES in the account's language ("Your balance is one thousand
 * two hundred shillings and fifty cents." / "Salio lako ni shilingi elfu moja mia mbili na senti hamsini.") and
 * hangs up. Never billed (the call is not on the credit monitor) and never refused for a zero balance (admission,
 * which would refuse it, is not asked; the phone token's call slots still bound how many a phone holds). Its CDR
 * is an internal call of the end-user to the short code, cost 0.
 */
export async function runBalanceCall(
  d: BalanceCallDeps,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  code: string,
  release: () => void,
): Promise<void> {
  const sc = { code, name: 'balance call', admitted: false, unbilled: true };
  await runShortCodeCall(d, req, srv, who, release, sc, async (row, caller) => {
    const account = await findAccount(d.db, who.accountId);
    const lang = noticeLanguageOf(account?.language);
    const n = account ? notice('balance', lang, { cents: account.balance_cents }) : notice('balanceUnavailable', lang);
    await d.media.say(row.id, CALLER_LEG, n.text, { language: n.language, signal: caller.gone });
  });
}
