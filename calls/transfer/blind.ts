import { AdmissionRefusedError } from '../../billing/index.js';
import { EventCodes, ReasonCodes, TransferRefusals } from '../../events/index.js';
import { SipError, type Uri } from '../../sip/stack/index.js';
import { listOwnedNumbers, type NewCall } from '../../store/index.js';
import type { ChildLeg } from '../child-leg.js';
import { dialLeg, mediaProfileFor, type DialLegOutcome } from '../flows/dial-leg.js';
import { dialPstn } from '../flows/dial-pstn.js';
import { failureReason } from '../flows/originate.js';
import { completeTowards, newLegTag, offerTowards, restoreTowards } from './leg-move.js';
import { resolveReferTarget, type ReferTarget } from './refer-target.js';
import type { TransferLeg } from './transfer-bridge.js';
import { completeTransfer, refuseTransfer, type Transfer, type TransferContext } from './transfer-steps.js';

/** Seconds a transfer target rings before the transfer fails (the transferee stays with the transferor). */
export const TRANSFER_RING_SECONDS = 30;

/** Blind transfer: the target is rung with the transferee's media; on answer it replaces the transferor. */
export async function blindTransfer(t: Transfer, uri: Uri, domains: string[]): Promise<void> {
  const { d, bridge, transferee } = t;
  const row = bridge.life.row;
  const target = await resolveReferTarget(d, row.account_id, uri, domains);
  if (!target.ok) return refuseTransfer(t, target.status, target.reason);
  const newCall = await legFor(d, row.account_id, transferee, target);
  if (!newCall) return refuseTransfer(t, 403, TransferRefusals.notAllowed);
  let leg: ChildLeg;
  try {
    const to = target.kind === 'number' ? target.e164 : undefined;
    leg = await d.admission.admit({ accountId: row.account_id, to }, () => d.openLeg(bridge, newCall));
  } catch (e) {
    if (!(e instanceof AdmissionRefusedError)) throw e;
    return refuseTransfer(t, e.code === ReasonCodes.insufficientBalance ? 402 : 403, e.code);
  }
  await leg.life.initiated();
  const next = {
    tag: newLegTag(),
    side: target.kind === 'extension' ? mediaProfileFor(target.binding.target.transport) : { profile: 'rtp' as const },
    party: newCall.to_number,
  };
  const cancel = new AbortController();
  bridge.onEnd(() => cancel.abort());
  const outcome = await dialTarget(t, target, newCall, next, leg, cancel.signal).catch(
    (error: unknown): DialLegOutcome => ({ ok: false, error, noAnswer: false }),
  );
  if (!outcome.ok) {
    const reason = failureReason(outcome.error, outcome.noAnswer);
    await leg.end(reason);
    if (!bridge.isEnding) await restoreTowards(d.media, row.id, transferee, t.transferor).catch(() => undefined);
    await bridge.life.emit(EventCodes.transferFailed, { reasonCode: reason, childSid: leg.life.row.sid });
    const status = outcome.error instanceof SipError && outcome.error.status >= 300 ? outcome.error.status : 500;
    await t.sub.finish(outcome.noAnswer ? 408 : status);
    return;
  }
  const dialog = outcome.dialog;
  if (bridge.isEnding || !(await leg.answered())) {
    await dialog.bye().catch(() => undefined);
    await leg.end(bridge.isEnding ? ReasonCodes.normalHangup : ReasonCodes.rejected);
    if (!bridge.isEnding) await restoreTowards(d.media, row.id, transferee, t.transferor).catch(() => undefined);
    await t.sub.finish(503);
    return;
  }
  await completeTowards(d.media, row.id, transferee, next.tag, dialog.remoteSdp ?? '', d.log);
  await completeTransfer(t, { ...next, dialog }, leg, 'blind', target.kind === 'extension');
}

/** Rings the target with the transferee's media offered towards it (NOTIFY 180 when it rings). */
async function dialTarget(
  t: Transfer,
  target: Extract<ReferTarget, { ok: true }>,
  call: NewCall,
  next: { tag: string; side: TransferLeg['side'] },
  leg: ChildLeg,
  signal: AbortSignal,
): Promise<DialLegOutcome> {
  const { d } = t;
  const sdp = await offerTowards(d.media, t.bridge.life.row.id, t.transferee, next);
  const onRinging = () => {
    void leg.life.ringing();
    void t.sub.progress(180, 'Ringing');
  };
  if (target.kind === 'number') {
    return dialPstn(d, {
      number: target.e164,
      plan: target.plan,
      from: `<sip:${call.from_number}@${d.config.publicHost}>`,
      sdp,
      timeoutSeconds: TRANSFER_RING_SECONDS,
      signal,
      onRinging,
      onAttempt: async (code, data) => void (await leg.life.emit(code, data)),
    });
  }
  const domain = t.domain ?? d.config.publicHost;
  return dialLeg(d, {
    target: {
      uri: target.binding.contact,
      proxy: target.binding.target,
      transport: target.binding.target.transport,
      route: target.binding.route,
    },
    from: `<sip:${call.from_number}@${domain}>`,
    to: `<sip:${target.extension}@${domain}>`,
    sdp,
    timeoutSeconds: TRANSFER_RING_SECONDS,
    signal,
    onRinging,
  });
}

/**
 * The new leg's CDR: `internal` to an extension (presenting the transferee), `outbound` to a number, presenting
 * the account's first active DID as any outbound call of the account does (undefined: it has none to present).
 */
async function legFor(
  d: TransferContext,
  accountId: string,
  transferee: TransferLeg,
  target: Extract<ReferTarget, { ok: true }>,
): Promise<NewCall | undefined> {
  if (target.kind === 'extension') {
    return { account_id: accountId, direction: 'internal', from_number: transferee.party, to_number: target.extension };
  }
  const did = (await listOwnedNumbers(d.db, accountId)).find((n) => n.is_active);
  if (!did) return undefined;
  return {
    account_id: accountId,
    direction: 'outbound',
    from_number: did.number,
    to_number: target.e164,
    number_id: did.id,
  };
}
