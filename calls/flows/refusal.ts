import { AdmissionRefusedError, type AdmissionCode } from '../../billing/index.js';
import {
  EventCodes,
  ReasonCodes,
  reasonLabel,
  type EventCode,
  type EventPublisher,
  type ReasonCode,
} from '../../events/index.js';
import { insertCall, nowIso, type Db, type NewCall } from '../../store/index.js';
import type { Responder } from '../../sip/stack/index.js';

/**
 * SIP answers to a refused call (spec, Errors 7: "a browser-phone call that is refused returns a specific
 * SIP-style status"). Documented in the README: 402 insufficient balance, 403 suspended, 486 concurrency cap,
 * 503 with Retry-After for the CPS cap and for draining.
 */
const SIP_REFUSAL: Record<AdmissionCode, { status: number; reason: string; retryAfter?: number }> = {
  [ReasonCodes.insufficientBalance]: { status: 402, reason: 'Payment Required' },
  [ReasonCodes.accountSuspended]: { status: 403, reason: 'Forbidden' },
  [ReasonCodes.concurrencyCap]: { status: 486, reason: 'Busy Here' },
  [ReasonCodes.cpsLimit]: { status: 503, reason: 'Service Unavailable', retryAfter: 1 },
  [ReasonCodes.platformPaused]: { status: 503, reason: 'Service Unavailable', retryAfter: 30 },
};

/** The refusal event of each admission code (spec catalogue: the code is both the event and the reason). */
const REFUSAL_EVENT: Record<AdmissionCode, EventCode> = {
  [ReasonCodes.insufficientBalance]: EventCodes.walletInsufficient,
  [ReasonCodes.accountSuspended]: EventCodes.accountSuspended,
  [ReasonCodes.concurrencyCap]: EventCodes.concurrencyExceeded,
  [ReasonCodes.cpsLimit]: EventCodes.cpsExceeded,
  [ReasonCodes.platformPaused]: EventCodes.platformDraining,
};

/**
 * Records a call that was refused before it was placed: a `failed` CDR with the reason, the refusal event and
 * CALL.0400. Never dialled, never billed.
 */
export async function recordRefusedCall(
  db: Db,
  events: EventPublisher,
  call: NewCall,
  reason: ReasonCode,
  refusalEvent?: EventCode,
): Promise<void> {
  const now = nowIso();
  const row = await insertCall(db, {
    ...call,
    status: 'failed',
    reason_code: reason,
    reason_label: reasonLabel(reason),
    started_at: now,
    ended_at: now,
  });
  if (refusalEvent)
    await events.emit({ accountId: row.account_id, code: refusalEvent, callId: row.id, data: { reasonCode: reason } });
  await events.emit({ accountId: row.account_id, code: EventCodes.callFailed, callId: row.id });
}

export async function refuseAdmission(
  db: Db,
  events: EventPublisher,
  srv: Responder,
  call: NewCall,
  e: AdmissionRefusedError,
): Promise<void> {
  const sip = SIP_REFUSAL[e.code];
  await recordRefusedCall(db, events, call, e.code as ReasonCode, REFUSAL_EVENT[e.code]);
  srv.send(sip.status, sip.reason, sip.retryAfter ? { headers: { 'Retry-After': String(sip.retryAfter) } } : {});
}
