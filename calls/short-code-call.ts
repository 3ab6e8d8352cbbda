import { AdmissionRefusedError } from '../billing/index.js';
import { ReasonCodes } from '../events/index.js';
import { MediaError } from '../media/index.js';
import type { EndUserIdentity } from '../sip/index.js';
import type { Responder, SipRequest } from '../sip/stack/index.js';
import { insertCall, nowIso, type CallRow, type NewCall } from '../store/index.js';
import type { FlowServices } from './flows/flow-services.js';
import { refuseAdmission } from './flows/refusal.js';
import { answerCaller, type AnsweredCaller } from './voicemail/ivr-leg.js';

/**
 * True when a phone's Request-URI user part is `code`, percent-decoded as phones may send it (`%2A97`, `*100%23`);
 * a user part longer than `max` is not read.
 */
export function dialsShortCode(user: string | undefined, code: string, max: number): boolean {
  if (!user || !code || user.length > max) return false;
  try {
    return decodeURIComponent(user) === code;
  } catch {
    return false;
  }
}

/** What sets one short code's call apart from another's. */
export interface ShortCode {
  /** What the phone dialled: the CDR's `to`. */
  code: string;
  /** The service in the logs ('mailbox', 'balance call'). */
  name: string;
  /** Asks admission first, refused as any call of the account would be; false: never refused (e.g. for money). */
  admitted: boolean;
  /** Keeps the call off the credit monitor (never billed). */
  unbilled: boolean;
}

/**
 * A short code dialled from a phone (`*97`, `*100#`): an internal call of the end-user to the code, answered by the
 * switch's own media (voicemail/ivr-leg.ts), which `serve` then speaks on; the phone is hung up when it is done. A
 * media failure while serving is logged and the call ends normally; one before the answer is a 500.
 */
export async function runShortCodeCall(
  d: FlowServices,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  release: () => void,
  sc: ShortCode,
  serve: (row: CallRow, caller: AnsweredCaller) => Promise<void>,
): Promise<void> {
  const base: NewCall = {
    account_id: who.accountId,
    direction: 'internal',
    from_number: who.extension,
    to_number: sc.code,
    end_user_id: who.endUserId,
  };
  const insert = () => insertCall(d.db, { ...base, started_at: nowIso() });
  let row: CallRow;
  try {
    row = sc.admitted ? await d.admission.admit({ accountId: who.accountId }, insert) : await insert();
  } catch (e) {
    if (e instanceof AdmissionRefusedError) return refuseAdmission(d.db, d.events, srv, base, e);
    throw e;
  }
  const call = sc.unbilled ? d.trackBridge(row, { unbilled: true }) : d.trackBridge(row);
  call.onEnd(release);
  await call.life.initiated();
  srv.signal.addEventListener('abort', () => void call.end(ReasonCodes.canceled), { once: true });
  const caller = await answerCaller(d, { req, srv, call }).catch((e: unknown) => {
    d.log.warn({ err: e, call: row.sid }, `${sc.name} could not answer the phone`);
    return undefined;
  });
  if (!caller) {
    srv.send(500, 'Server Internal Error'); // ignored when the phone was answered already
    await call.end(call.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
    return;
  }
  try {
    await serve(row, caller);
  } catch (e) {
    if (!(e instanceof MediaError)) throw e;
    d.log.warn({ err: e, call: row.sid }, `${sc.name} media failed`);
  } finally {
    await caller.hangup();
  }
}
