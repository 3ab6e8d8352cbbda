import { AdmissionRefusedError } from '../../billing/index.js';
import { DEFAULT_COUNTRY } from '../../config/index.js';
import { NumberFormatError, normalise } from '../../numbers/index.js';
import { ReasonCodes } from '../../events/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import {
  findNumberByE164Cached,
  getAccountSettings,
  insertCall,
  nowIso,
  type CallRow,
  type TrunkRow,
} from '../../store/index.js';
import type { FlowDeps } from './flow-deps.js';
import { recordRefusedCall, refuseAdmission } from './refusal.js';
import type { LiveCall } from '../live-call.js';
import { uasLeg } from './uas-leg.js';

/**
 * A carrier's Request-URI user part as E.164: carriers send `+2547…`, `2547…`, `002547…` or the national `07…`,
 * read with the platform's country (numbers.defaultCountry). What is no number of that plan keeps the old reading
 * (its digits after a `+`), which then matches no DID.
 */
export function didFromRequest(req: SipRequest, country = DEFAULT_COUNTRY): string {
  const user = safeDecode((req.uri as { user?: string }).user ?? '');
  try {
    return normalise(user, country);
  } catch (e) {
    if (!(e instanceof NumberFormatError)) throw e;
    const digits = user.replace(/[^\d+]/g, '');
    return digits.startsWith('+') ? digits : `+${digits}`;
  }
}

/** The caller's number in E.164 when it is one (national forms included); else as the carrier sent it. */
export function callerFromRequest(req: SipRequest, country = DEFAULT_COUNTRY): string {
  const from = req.headers.get('from') ?? '';
  const m = /sips?:([^@;>]+)@/.exec(from) ?? /tel:([^;>]+)/.exec(from);
  if (!m) return 'anonymous';
  const caller = safeDecode(m[1]);
  try {
    return normalise(caller, country);
  } catch {
    return caller;
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Inbound PSTN call: a carrier INVITE to one of an account's DIDs. Unknown or inactive numbers get 404 and
 * END.0404; admission refusals get their SIP status; otherwise the call rings (180) while the number's
 * voice_inbound route (per-number override, then account default) is fetched, and the platform answers it only
 * when a verb needs media (spec: CallStatus is `ringing` on inbound). A document that hangs up first, or a
 * failed fetch with the `drop` fallback, refuses the call unanswered and unbilled (LiveCall.answerWhenNeeded).
 */
export async function runInbound(
  d: FlowDeps,
  track: (row: CallRow) => LiveCall,
  req: SipRequest,
  srv: Responder,
  trunk: TrunkRow,
): Promise<void> {
  const country = d.config.numbers?.defaultCountry ?? DEFAULT_COUNTRY;
  const did = didFromRequest(req, country);
  const caller = callerFromRequest(req, country);
  const number = await findNumberByE164Cached(d.db, did);
  if (!number?.account_id || !number.is_active) {
    srv.send(404, 'Not Found');
    if (number?.account_id) {
      const base = {
        account_id: number.account_id,
        direction: 'inbound' as const,
        from_number: caller,
        to_number: did,
        number_id: number.id,
      };
      await recordRefusedCall(d.db, d.events, base, ReasonCodes.unallocatedNumber);
    }
    d.log.info({ did, trunk: trunk.name }, 'inbound call to an unallocated number');
    return;
  }
  const account = await getAccountSettings(d.db, number.account_id);
  const base = {
    account_id: account.id,
    direction: 'inbound' as const,
    from_number: caller,
    to_number: did,
    number_id: number.id,
  };
  let row: CallRow;
  try {
    row = await d.admission.admit({ accountId: account.id }, () => insertCall(d.db, { ...base, started_at: nowIso() }));
  } catch (e) {
    if (e instanceof AdmissionRefusedError) return refuseAdmission(d.db, d.events, srv, base, e);
    throw e;
  }
  const call = track(row);
  await call.life.initiated();
  srv.send(180, 'Ringing');
  await call.life.ringing();
  srv.signal.addEventListener('abort', () => void call.end(ReasonCodes.canceled), { once: true });
  call.answerWhenNeeded(uasLeg(d, call, req, srv));
  if (srv.canceled) return void (await call.end(ReasonCodes.canceled)); // CANCELed before the listener was set
  const url = number.webhook_voice_inbound || account.webhook_voice_inbound;
  await call.runVerbs({ url });
}
