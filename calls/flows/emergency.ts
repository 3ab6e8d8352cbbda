import type { EndUserIdentity } from '../../sip/index.js';
import type { Responder, SipRequest } from '../../sip/stack/index.js';
import { insertCall, listOwnedNumbers, nowIso, type CallRow, type NewCall } from '../../store/index.js';
import { dialPstn } from './dial-pstn.js';
import type { FlowDeps } from './flow-deps.js';
import type { BridgedCall } from '../bridged-call.js';
import { bridgePhone } from './phone-bridge.js';

/** How long an emergency call may ring before it is given up (the phone can always dial again). */
const EMERGENCY_RING_SECONDS = 60;

/**
 * An emergency call from a registered phone (112, 999, 911 or numbers.emergencyNumbers). It is
 * never refused: no admission (balance, suspension, caps, CPS, draining), no allowlist, no webhook; overload control
 * lets it through at the SIP edge. It goes straight to the `emergency` route (else the first trunk that is up),
 * presenting the account's DID as the caller's identity, bridged to the phone like an on-net call. Its CDR carries
 * `emergency: true` and it is not billed (the BridgedCall is made without credit control: engine.ts).
 */
export async function runEmergency(
  d: FlowDeps & { trackBridge: (row: CallRow) => BridgedCall },
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  number: string,
  release: () => void,
): Promise<void> {
  const did = (await listOwnedNumbers(d.db, who.accountId)).find((n) => n.is_active);
  // Without a DID the extension is presented: an emergency call is placed whatever the account owns.
  const identity = did?.number ?? who.extension;
  const base: NewCall = {
    account_id: who.accountId,
    direction: 'outbound',
    from_number: identity,
    to_number: number,
    end_user_id: who.endUserId,
    number_id: did?.id ?? null,
    emergency: true,
  };
  const row = await insertCall(d.db, { ...base, started_at: nowIso() });
  d.log.warn({ call: row.sid, account: who.accountId, number }, 'emergency call');
  const call = d.trackBridge(row);
  call.onEnd(release);
  await bridgePhone(d, req, srv, call, {
    side: { profile: 'rtp' },
    dial: (o) =>
      dialPstn(d, {
        number,
        emergency: true,
        from: `<sip:${identity}@${d.config.publicHost}>`,
        sdp: o.sdp,
        timeoutSeconds: EMERGENCY_RING_SECONDS,
        signal: o.signal,
        onRinging: o.onRinging,
        onAttempt: (code, data) => call.life.emit(code, data),
      }),
  });
}
