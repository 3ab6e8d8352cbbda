import { EventCodes, ReasonCodes } from '../../events/index.js';
import { SipError } from '../../sip/stack/index.js';
import type { OutboundPlan } from '../../sip/index.js';
import { AdmissionRefusedError, checkDestination } from '../../billing/index.js';
import { findActiveNumberOf } from '../../store/index.js';
import type { DialOptions, DialResult, DialTarget } from '../../verbs/index.js';
import type { FlowDeps } from './flow-deps.js';
import { dialLeg, mediaProfileFor, type LegTarget } from './dial-leg.js';
import { dialPstn } from './dial-pstn.js';
import type { EndUserLocator } from './end-user.js';
import { CALLER_LEG, type LiveCall } from '../live-call.js';
import type { ChildLeg } from '../child-leg.js';
import { relayReinvites } from '../reinvite-relay.js';
import { failureReason } from './originate.js';
import { e164ForAccount } from './account-country.js';

export const DIALLED_LEG = 'B';

export interface DialVerbDeps extends FlowDeps {
  locator?: EndUserLocator;
  /**
   * Opens the CDR and billing of a PSTN leg this call dials (calls/child-leg.ts): writes it as a live call. Run
   * inside admission, so the leg counts against the account's caps from the moment it exists.
   */
  openChildLeg: (parent: LiveCall, from: string, to: string) => Promise<ChildLeg>;
}

/**
 * The Dial verb on a call the platform answered (inbound, end-user) or placed (originate): ring the target (a PSTN
 * number through the carrier trunk, or an on-net extension of the same account at its registered contact), and on
 * answer move the caller's media from our IVR endpoint to the new leg inside rtpengine (media.offerFromIvr keeps
 * the caller's port, so the caller needs no re-INVITE). When the dialled leg hangs up or timeLimit passes, the
 * caller is moved back to the IVR (media.returnToIvr) and the verbs go on: the Dial's action document, or the
 * next verb (TwiML's rule). DIAL.0200 on answer, DIAL.0300 at the end.
 */
export async function runDial(
  d: DialVerbDeps,
  call: LiveCall,
  target: DialTarget,
  o: DialOptions,
): Promise<DialResult> {
  const row = call.row;
  const finish = async (result: DialResult, reason?: string): Promise<DialResult> => {
    await call.life.emit(EventCodes.dialCompleted, {
      DialCallStatus: result.status,
      DialCallDuration: result.durationSeconds,
      ...(reason === undefined ? {} : { reason }),
    });
    return result;
  };
  if (target.kind === 'number') {
    // Numbers as people write them (issue 17, item 5): `0712 345 678` is read with the account's country; what is
    // no number is not dialled (DIAL.0300 failed with the NUMBER_* reason) and the call goes on.
    const read = await e164ForAccount(d, row.account_id, target.number);
    if (!read.ok) return finish({ status: 'failed', durationSeconds: 0 }, read.code);
    target = { kind: 'number', number: read.e164 };
  }
  if (o.callerId !== undefined) {
    // Caller ID spoofing control: a Dial presents only an active number of the account. Anything else is not
    // dialled; DIAL.0300 says failed with reason CALLER_ID_NOT_OWNED and the call goes on.
    if (!(await findActiveNumberOf(d.db, row.account_id, o.callerId))) {
      d.log.info({ call: row.sid, callerId: o.callerId }, 'Dial callerId is not a number of the account');
      return finish({ status: 'failed', durationSeconds: 0 }, 'CALLER_ID_NOT_OWNED');
    }
  }
  if (target.kind === 'number') {
    // Toll-fraud control: a destination outside the allowlist (or platform-blocked) is never dialled; DIAL.0403,
    // the action callback gets DialCallStatus=failed and the parent call goes on with the next verb.
    const verdict = await checkDestination(d.db, row.account_id, target.number);
    if (!verdict.allowed) {
      await call.life.emit(EventCodes.dialBlocked, { to: target.number, reason: verdict.reason });
      return { status: 'failed', durationSeconds: 0 };
    }
  }
  const leg = await resolveTarget(d, row.account_id, target);
  if (!leg || !d.media.hasSession(row.id)) return finish({ status: 'failed', durationSeconds: 0 });
  const presented = o.callerId ?? row.from_number;
  let child: ChildLeg | undefined;
  if (target.kind === 'number') {
    // A PSTN leg is a new call of the account (its own CDR, rated and billed as outbound), so it passes the same
    // admission as originate (spec, Limits): suspension, draining, balance for its first block on top of the
    // calls already live (the parent among them), concurrency and CPS caps. A refused leg is never written,
    // dialled nor billed; DIAL.0300 carries the refusal's reason code and the verbs go on (docs/verbs.md).
    // On-net extensions are not new calls (no CDR, not billed, like the callee side of an internal call).
    const number = target.number;
    try {
      child = await d.admission.admit({ accountId: row.account_id, to: number }, () =>
        d.openChildLeg(call, presented, number),
      );
    } catch (e) {
      if (!(e instanceof AdmissionRefusedError)) throw e;
      d.log.info({ call: row.sid, to: number, code: e.code }, 'Dial leg refused by admission');
      return finish({ status: 'failed', durationSeconds: 0 }, e.code);
    }
  }
  try {
    return await bridge(d, call, leg, o, presented, child, finish);
  } finally {
    // Whatever happened above, an admitted leg's CDR is closed: a live row would hold the account's concurrency
    // slot and first block until the reconcile sweep. A leg already ended keeps its own reason (first end wins).
    if (child && !child.life.isEnded) await child.end(ReasonCodes.carrierFailure).catch(() => undefined);
  }
}

/** Rings the resolved leg and, on answer, bridges the caller to it until either side ends it. */
async function bridge(
  d: DialVerbDeps,
  call: LiveCall,
  leg: ResolvedLeg,
  o: DialOptions,
  presented: string,
  child: ChildLeg | undefined,
  finish: (result: DialResult) => Promise<DialResult>,
): Promise<DialResult> {
  const row = call.row;
  let sdp: string;
  try {
    sdp = await d.media.offerFromIvr(row.id, CALLER_LEG, DIALLED_LEG, { toSide: mediaProfileFor(leg.transport) });
  } catch (e) {
    d.log.warn({ err: e, call: row.sid }, 'Dial: the caller media could not be offered to a new leg');
    await child?.end(ReasonCodes.carrierFailure);
    return finish({ status: 'failed', durationSeconds: 0 });
  }
  // Dial's `record`: a RecordSession of the rest of the call, from ringing or from answer (docs/verbs.md).
  const record = (from: 'ringing' | 'answer') =>
    o.record.startsWith(`record-from-${from}`)
      ? call.startSessionRecording({ channels: o.record.endsWith('-dual') ? 'dual' : 'mono' })
      : Promise.resolve();
  await record('ringing');
  await child?.life.initiated();
  const common = {
    from: `<sip:${presented}@${d.config.publicHost}>`,
    sdp,
    timeoutSeconds: o.timeout,
    signal: o.signal,
    onRinging: () => void child?.life.ringing(),
    // CALL.0183 on the leg's own CDR, like its CALL.0180 (an on-net extension has no CDR, so no event).
    onEarlyMedia: () => void child?.life.progress(),
  };
  // A PSTN leg tries its routes in order with failover, each attempt a ROUTE.0100 on the leg's own CDR.
  const outcome =
    leg.kind === 'pstn'
      ? await dialPstn(d, {
          ...common,
          number: leg.number,
          plan: leg.plan,
          onAttempt: async (code, data) => void (await child?.life.emit(code, data)),
        })
      : await dialLeg(d, { ...common, target: leg });
  if (!outcome.ok) {
    await child?.end(failureReason(outcome.error, outcome.noAnswer));
    const status = outcome.noAnswer ? 'no-answer' : dialStatusFor(outcome.error);
    await backToIvr(d, call);
    return finish({ status, durationSeconds: 0 });
  }
  if (child && !(await child.answered())) {
    // The dialled destination cannot be rated: it is not carried for free.
    await outcome.dialog.bye().catch(() => undefined);
    await child.end(ReasonCodes.rejected);
    await backToIvr(d, call);
    return finish({ status: 'failed', durationSeconds: 0 });
  }
  const dialog = outcome.dialog;
  // The caller's side keeps the profile it was answered or placed with (a browser stays on WebRTC).
  await d.media.answer(row.id, CALLER_LEG, DIALLED_LEG, dialog.remoteSdp ?? '');
  await call.life.emit(EventCodes.dialAnswered, {});
  await record('answer');
  // Hold and resume from either side cross the bridge (reinvite-relay.ts) while it lasts.
  const relay = call.dialog
    ? relayReinvites(
        d.media,
        row.id,
        [
          { dialog: call.dialog, tag: CALLER_LEG, side: d.media.legSide(row.id, CALLER_LEG) ?? { profile: 'rtp' } },
          { dialog, tag: DIALLED_LEG, side: mediaProfileFor(leg.transport) },
        ],
        d.log,
      )
    : undefined;
  const answeredAt = Date.now();
  // Bridged until either side hangs up, the verb is killed (the caller hung up), or timeLimit passes.
  await new Promise<void>((resolve) => {
    const limit = setTimeout(done, o.timeLimit * 1000);
    function done() {
      clearTimeout(limit);
      o.signal.removeEventListener('abort', done);
      resolve();
    }
    dialog.once('bye', done);
    o.signal.addEventListener('abort', done, { once: true });
    call.onEnd(done);
  });
  relay?.stop();
  if (dialog.state !== 'terminated') await dialog.bye().catch(() => undefined);
  await child?.end(ReasonCodes.normalHangup);
  const seconds = Math.round((Date.now() - answeredAt) / 1000);
  await backToIvr(d, call);
  return finish({ status: 'completed', durationSeconds: seconds });
}

/**
 * The caller is still up after the Dial: point its media back at the IVR so the next verbs are heard. A caller
 * that hung up (or a call being ended) needs nothing; a caller whose media cannot be moved back is hung up.
 */
async function backToIvr(d: DialVerbDeps, call: LiveCall): Promise<void> {
  if (call.isEnding || !d.media.hasSession(call.id)) return;
  try {
    await d.media.returnToIvr(call.id, CALLER_LEG);
  } catch (e) {
    d.log.warn({ err: e, call: call.row.sid }, 'Dial: the caller could not be moved back to the IVR; hanging up');
    void call.end(ReasonCodes.normalHangup);
  }
}

/** A PSTN number goes out by the routes table (dial-pstn.ts); an extension to its registered contact. */
type ResolvedLeg =
  { kind: 'pstn'; number: string; plan: OutboundPlan; transport: 'UDP' } | (LegTarget & { kind: 'sip' });

async function resolveTarget(d: DialVerbDeps, accountId: string, target: DialTarget): Promise<ResolvedLeg | undefined> {
  if (target.kind === 'number') {
    const plan = await d.sip.trunks.outboundPlan(target.number);
    return plan.targets.length > 0 ? { kind: 'pstn', number: target.number, plan, transport: 'UDP' } : undefined;
  }
  if (target.kind !== 'extension') return undefined; // a <Queue> is the calls' own (calls/queue/)
  const [binding] = d.locator?.lookup(accountId, target.extension) ?? [];
  return binding
    ? { kind: 'sip', uri: binding.contact, proxy: binding.target, transport: binding.target.transport }
    : undefined;
}

function dialStatusFor(e: unknown): DialResult['status'] {
  if (e instanceof SipError && (e.status === 486 || e.status === 600)) return 'busy';
  if (e instanceof SipError && (e.status === 480 || e.status === 408)) return 'no-answer';
  return 'failed';
}
