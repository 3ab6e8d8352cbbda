import { checkDestination, type Admission } from '../../billing/index.js';
import type { Logger } from '../../config/index.js';
import { ReasonCodes } from '../../events/index.js';
import {
  LIVE_CALL_STATUSES,
  findActiveNumberOf,
  insertCall,
  nowIso,
  updateCall,
  type CallRow,
  type Db,
} from '../../store/index.js';
import type { CallEngine, OriginateOptions } from '../call-engine.js';

/** An originate request as the API read it: numbers in E.164, the call-control URL, the ring time. */
export interface OriginateRequest {
  readonly accountId: string;
  readonly from: string;
  readonly to: string;
  readonly url: string;
  /** Metadata kept on the call (`customPayload`), stored as JSON. */
  readonly customPayload?: Readonly<Record<string, unknown>> | null;
  readonly options: OriginateOptions;
}

/** Why an originate request placed no call: a stable code and the HTTP status the API answers with. */
export class OriginateRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: 'FROM_NOT_OWNED' | 'DESTINATION_BLOCKED' | 'CALL_ENGINE_UNAVAILABLE',
    detail: string,
  ) {
    super(detail);
    this.name = 'OriginateRefusedError';
  }
}

/**
 * An API-originated call (spec: POST /api/calls/originate) up to the moment the engine dials it: the presented
 * number must be the account's, the destination allowed, the call admitted and written as `initiated`, then handed
 * to the engine (calls/flows/originate.ts dials it). Resolves with the stored call; refusals are
 * OriginateRefusedError or billing's AdmissionRefusedError.
 */
export async function originateCall(
  d: { readonly db: Db; readonly admission: Admission; readonly engine: CallEngine; readonly log: Logger },
  r: OriginateRequest,
): Promise<CallRow> {
  const did = await findActiveNumberOf(d.db, r.accountId, r.from);
  if (!did)
    throw new OriginateRefusedError(
      422,
      'FROM_NOT_OWNED',
      `The field "from" (${r.from}) must be an active number owned by the account.`,
    );
  // Toll-fraud control (docs/security.md): a destination outside the account's allowlist or under a platform
  // block prefix is refused before anything is written, dialled or billed.
  const verdict = await checkDestination(d.db, r.accountId, r.to);
  if (!verdict.allowed)
    throw new OriginateRefusedError(
      403,
      'DESTINATION_BLOCKED',
      verdict.reason === 'blocked'
        ? `The field "to" (${r.to}) is in a range the platform blocks (prefix +${verdict.prefix}).`
        : `The field "to" (${r.to}) is outside the destinations this account may call.`,
    );
  // Admission writes the call inside the account's admission turn, so the concurrency count includes it.
  const call = await d.admission.admit({ accountId: r.accountId, to: r.to }, () =>
    insertCall(d.db, {
      account_id: r.accountId,
      direction: 'outbound',
      from_number: r.from,
      to_number: r.to,
      status: 'initiated',
      custom_payload: r.customPayload ?? null,
      webhook_url: r.url,
      number_id: did.id,
    }),
  );
  try {
    await d.engine.originate(call, r.options);
  } catch (err) {
    // The engine could not even start dialling: the call ends at once (nothing was billed).
    await updateCall(
      d.db,
      call.id,
      {
        status: 'failed',
        reason_code: ReasonCodes.carrierFailure,
        reason_label: 'Carrier or network failure',
        ended_at: nowIso(),
      },
      LIVE_CALL_STATUSES,
    );
    d.log.error({ err, sid: call.sid }, 'call engine refused an admitted call');
    throw new OriginateRefusedError(
      502,
      'CALL_ENGINE_UNAVAILABLE',
      'The call could not be started; it was not billed.',
    );
  }
  return call;
}
