import { ReasonCodes } from '../../events/index.js';
import { MediaError, notice, noticeLanguageOf } from '../../media/index.js';
import type { EndUserIdentity } from '../../sip/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import { findAccount, insertCall, nowIso, type CallRow, type NewCall } from '../../store/index.js';
import type { BridgedCall } from '../bridged-call.js';
import { CALLER_LEG } from '../call-media.js';
import type { FlowDeps } from '../flows/flow-deps.js';
import { answerCaller } from '../voicemail/ivr-leg.js';

/** True when a phone's Request-URI user part is the balance short code (`*100#`, `*100%23` as phones send it). */
export function isBalanceCode(user: string | undefined, code: string): boolean {
  if (!user || !code || user.length > 32) return false;
  try {
    return decodeURIComponent(user) === code;
  } catch {
    return false;
  }
}

export interface BalanceCallDeps extends FlowDeps {
  /** Tracks the call as a bridge of this process; `unbilled` keeps it off the credit monitor. */
  trackBridge: (row: CallRow, opts?: { unbilled?: boolean }) => BridgedCall;
}

/**
 * The balance short code (issue 23, item 2; `prepaid.balanceShortCode`, default `*100#`) from any registered phone:
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
  const base: NewCall = {
    account_id: who.accountId,
    direction: 'internal',
    from_number: who.extension,
    to_number: code,
    end_user_id: who.endUserId,
  };
  const row = await insertCall(d.db, { ...base, started_at: nowIso() });
  const call = d.trackBridge(row, { unbilled: true });
  call.onEnd(release);
  await call.life.initiated();
  srv.signal.addEventListener('abort', () => void call.end(ReasonCodes.canceled), { once: true });
  const caller = await answerCaller(d, { req, srv, call }).catch((e: unknown) => {
    d.log.warn({ err: e, call: row.sid }, 'balance call could not answer the phone');
    return undefined;
  });
  if (!caller) {
    if (!srv.finalResponse) srv.send(500, 'Server Internal Error');
    await call.end(call.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
    return;
  }
  try {
    const account = await findAccount(d.db, who.accountId);
    const lang = noticeLanguageOf(account?.language);
    const n = account ? notice('balance', lang, { cents: account.balance_cents }) : notice('balanceUnavailable', lang);
    await d.media.say(row.id, CALLER_LEG, n.text, { language: n.language, signal: caller.gone });
  } catch (e) {
    if (!(e instanceof MediaError)) throw e;
    d.log.warn({ err: e, call: row.sid }, 'balance not spoken');
  } finally {
    await caller.hangup();
  }
}
