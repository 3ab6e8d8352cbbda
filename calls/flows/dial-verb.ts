import { secondsUp } from '../../billing/index.js';
import { EventCodes, ReasonCodes } from '../../events/index.js';
import { SipError } from '../../sip/stack/index.js';
import { findActiveNumberOf } from '../../store/index.js';
import type { DialOptions, DialResult, DialTarget } from '../../verbs/index.js';
import { mediaProfileFor, type DialLegOptions, type DialLegOutcome } from './dial-leg.js';
import { dialPstn } from './dial-pstn.js';
import { CALLER_LEG, type LiveCall } from '../live-call.js';
import { DialBridge } from '../transfer/dial-bridge.js';
import { failureReason } from './originate.js';
import { detectAndReport, forkedAudio } from '../machine-detection.js';
import { raceForks } from './fork.js';
import { ringBindings } from './ring-bindings.js';
import { closeLeg, prepareLeg, type PreparedLeg } from './dial-targets.js';
import type { FlowServices } from './flow-services.js';

export const DIALLED_LEG = 'B';

/** How one ringing of a Dial ended, before DIAL.0300 says so. */
type Rung = { result: DialResult; reason?: string };

/**
 * The Dial verb on a call the platform answered (inbound, end-user) or placed (originate): ring the target (a PSTN
 * number through the carrier trunk, or an on-net extension of the same account at every registered contact), and
 * on answer move the caller's media from our IVR endpoint to the new leg inside rtpengine (media.offerFromIvr keeps
 * the caller's port, so the caller needs no re-INVITE). Several targets ring at once and the first to answer wins
 * (TwiML simultaneous dial), or one after another with `sequential` (beyond the spec), each for the Dial's timeout.
 * When the dialled leg hangs up or timeLimit passes, the caller is moved back to the IVR (media.returnToIvr) and the
 * verbs go on: the Dial's action document, or the next verb (TwiML's rule). DIAL.0200 on answer, DIAL.0300 at the end.
 */
export async function runDial(
  d: FlowServices,
  call: LiveCall,
  target: DialTarget,
  o: DialOptions,
): Promise<DialResult> {
  const row = call.row;
  const finish = async ({ result, reason }: Rung): Promise<DialResult> => {
    await call.life.emit(EventCodes.dialCompleted, {
      DialCallStatus: result.status,
      DialCallDuration: result.durationSeconds,
      ...(reason === undefined ? {} : { reason }),
    });
    return result;
  };
  const failed = (reason?: string): Rung => ({ result: { status: 'failed', durationSeconds: 0 }, reason });
  if (o.callerId !== undefined) {
    // Caller ID spoofing control: a Dial presents only an active number of the account. Anything else is not
    // dialled; DIAL.0300 says failed with reason CALLER_ID_NOT_OWNED and the call goes on.
    if (!(await findActiveNumberOf(d.db, row.account_id, o.callerId))) {
      d.log.info({ call: row.sid, callerId: o.callerId }, 'Dial callerId is not a number of the account');
      return finish(failed('CALLER_ID_NOT_OWNED'));
    }
  }
  const presented = o.callerId ?? row.from_number;
  const targets = o.targets && o.targets.length > 1 ? o.targets : [target];
  if (o.sequential && targets.length > 1) {
    // One after another, each with the Dial's timeout and its own leg, until one answers or the caller leaves.
    let last: Rung = failed();
    for (const t of targets) {
      if (o.signal.aborted || call.isEnding) break;
      const p = await prepareLeg(d, call, t, presented);
      if (!p.ok) {
        last = failed(p.reason);
        continue;
      }
      last = await ringAndBridge(d, call, [p.leg], o, presented);
      if (last.result.status === 'completed') break;
    }
    return finish(last);
  }
  const legs: PreparedLeg[] = [];
  let refused: { reason?: string; silent?: boolean } = {};
  for (const t of targets) {
    // One rtpengine offer serves every leg: the first target's media profile is the one they all take.
    const profile = legs[0] ? mediaProfileFor(legs[0].leg.transport).profile : undefined;
    const p = await prepareLeg(d, call, t, presented, profile);
    if (p.ok) legs.push(p.leg);
    else refused = p;
  }
  // A lone target blocked by the allowlist said so with DIAL.0403 and ends the Dial without DIAL.0300.
  if (legs.length === 0 && targets.length === 1 && refused.silent) return { status: 'failed', durationSeconds: 0 };
  if (legs.length === 0) return finish(failed(refused.reason));
  return finish(await ringAndBridge(d, call, legs, o, presented));
}

/**
 * Rings the prepared legs at once and, on the first answer, bridges the caller to it until either side ends it.
 * Whatever happens, every admitted leg's CDR is closed: a live row would hold the account's concurrency slot and
 * first block until the reconcile sweep (a leg already ended keeps its own reason: first end wins).
 */
async function ringAndBridge(
  d: FlowServices,
  call: LiveCall,
  legs: PreparedLeg[],
  o: DialOptions,
  presented: string,
): Promise<Rung> {
  try {
    return await bridge(d, call, legs, o, presented);
  } finally {
    for (const leg of legs) await closeLeg(leg);
  }
}

async function bridge(
  d: FlowServices,
  call: LiveCall,
  legs: PreparedLeg[],
  o: DialOptions,
  presented: string,
): Promise<Rung> {
  const row = call.row;
  const failed: Rung = { result: { status: 'failed', durationSeconds: 0 } };
  let sdp: string;
  const side = mediaProfileFor(legs[0]!.leg.transport);
  try {
    sdp = await d.media.offerFromIvr(row.id, CALLER_LEG, DIALLED_LEG, { toSide: side });
  } catch (e) {
    d.log.warn({ err: e, call: row.sid }, 'Dial: the caller media could not be offered to a new leg');
    return failed;
  }
  // Dial's `record`: a RecordSession of the rest of the call, from ringing or from answer (docs/verbs.md).
  const record = (from: 'ringing' | 'answer') =>
    o.record.startsWith(`record-from-${from}`)
      ? call.startSessionRecording({ channels: o.record.endsWith('-dual') ? 'dual' : 'mono' })
      : Promise.resolve();
  await record('ringing');
  for (const leg of legs) await leg.child?.life.initiated();
  const common = { from: `<sip:${presented}@${d.config.publicHost}>`, sdp, timeoutSeconds: o.timeout };
  const outcome = await raceForks(
    legs.map((leg) => (signal: AbortSignal) => ring(d, leg, { ...common, signal })),
    o.signal,
  );
  if (!outcome.ok) {
    const status = outcome.noAnswer ? 'no-answer' : dialStatusFor(outcome.error);
    await backToIvr(d, call, o);
    return { result: { status, durationSeconds: 0 } };
  }
  const won = legs[outcome.index]!;
  // The legs that lost are being CANCELled: their CDRs end now (unanswered, unbilled), not when the CANCEL is done.
  for (const leg of legs) if (leg !== won) await leg.child?.end(ReasonCodes.canceled);
  const dialog = outcome.dialog;
  if (won.child && !(await won.child.answered())) {
    // The dialled destination cannot be rated: it is not carried for free.
    await dialog.bye().catch(() => undefined);
    await won.child.end(ReasonCodes.rejected);
    await backToIvr(d, call, o);
    return failed;
  }
  // The caller's side keeps the profile it was answered or placed with (a browser stays on WebRTC).
  await d.media.answer(row.id, CALLER_LEG, DIALLED_LEG, dialog.remoteSdp ?? '');
  // <Number machineDetection>: the parties talk at once while the detector hears a copy of the dialled leg's
  // audio; the verdict is the dialled leg's (AMD.0200, answered_by, amdStatusCallback). It starts as soon as the
  // bridge exists, before anything is written, so the first words are heard; the bridge ending stops it.
  const detecting = won.detection && won.child ? new AbortController() : undefined;
  if (detecting) {
    const audio = forkedAudio(d.media, row.id, DIALLED_LEG);
    void detectAndReport(d, won.child!.life, audio, won.detection!, detecting.signal);
  }
  await call.life.emit(EventCodes.dialAnswered, {});
  await record('answer');
  // Hold and resume from either side cross the bridge while it lasts; a dialled phone may transfer the caller with
  // REFER (calls/transfer/dial-bridge.ts).
  const bridged = new DialBridge(d, call, { dialog, tag: DIALLED_LEG, side }, won.leg.kind === 'sip');
  const answeredAt = Date.now();
  // Bridged until either side hangs up, the verb is killed (the caller hung up), or timeLimit passes.
  await new Promise<void>((resolve) => {
    const limit = setTimeout(done, o.timeLimit * 1000);
    function done() {
      clearTimeout(limit);
      o.signal.removeEventListener('abort', done);
      resolve();
    }
    bridged.onDialledBye(done);
    o.signal.addEventListener('abort', done, { once: true });
    call.onEnd(done);
  });
  detecting?.abort();
  await bridged.close();
  // The bridge died with the media engine: the dialled leg ends and is billed as the caller's call is.
  const mediaFailedAt = call.mediaFailedAt;
  const leg =
    mediaFailedAt === undefined
      ? await won.child?.end(ReasonCodes.normalHangup)
      : await won.child?.end(ReasonCodes.mediaFailure, mediaFailedAt);
  // DialCallDuration is the leg's talk time on its own CDR where it has one, else the same rounding (up).
  const seconds = leg?.talk_seconds ?? secondsUp(answeredAt, mediaFailedAt ?? Date.now());
  await backToIvr(d, call, o);
  return { result: { status: 'completed', durationSeconds: seconds } };
}

/**
 * Rings one leg: a PSTN number tries its routes in order with failover, each attempt a ROUTE.0100 on the leg's own
 * CDR; an extension rings every registered phone. CALL.0180/0183 go on the leg's CDR (an extension has none), and
 * a leg that does not connect has its CDR ended with its own reason (a lost fork: cancelled).
 */
async function ring(
  d: FlowServices,
  { leg, child }: PreparedLeg,
  common: Omit<DialLegOptions, 'target'>,
): Promise<DialLegOutcome> {
  const o = {
    ...common,
    onRinging: () => void child?.life.ringing(),
    onEarlyMedia: () => void child?.life.progress(),
  };
  const outcome =
    leg.kind === 'pstn'
      ? await dialPstn(d, {
          ...o,
          number: leg.number,
          plan: leg.plan,
          onAttempt: async (code, data) => void (await child?.life.emit(code, data)),
        })
      : await ringBindings(d, leg.bindings, o);
  if (!outcome.ok) await child?.end(failureReason(outcome.error, outcome.noAnswer));
  return outcome;
}

/**
 * The caller is still up after the Dial: point its media back at the IVR so the next verbs are heard. A caller
 * that hung up (or a call being ended) needs nothing; a caller whose media cannot be moved back is hung up.
 */
async function backToIvr(d: FlowServices, call: LiveCall, o: DialOptions): Promise<void> {
  if (call.isEnding || !d.media.hasSession(call.id)) return;
  if (o.endsCall === true && !o.signal.aborted) return; // the call ends next: nothing will play to the caller
  try {
    await d.media.returnToIvr(call.id, CALLER_LEG);
  } catch (e) {
    d.log.warn({ err: e, call: call.row.sid }, 'Dial: the caller could not be moved back to the IVR; hanging up');
    void call.end(ReasonCodes.normalHangup);
  }
}

function dialStatusFor(e: unknown): DialResult['status'] {
  if (e instanceof SipError && (e.status === 486 || e.status === 600)) return 'busy';
  if (e instanceof SipError && (e.status === 480 || e.status === 408)) return 'no-answer';
  return 'failed';
}
