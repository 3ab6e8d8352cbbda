import { EventCodes, ReasonCodes } from '../../events/index.js';
import type { OutboundPlan } from '../../sip/index.js';
import type { Target } from '../../sip/stack/index.js';
import { AdmissionRefusedError, checkDestination } from '../../billing/index.js';
import type { DialTarget, NumberMachineDetection } from '../../verbs/index.js';
import type { MachineDetectionRequest } from '../machine-detection.js';
import type { LiveCall } from '../live-call.js';
import type { ChildLeg } from '../child-leg.js';
import type { FlowServices } from './flow-services.js';
import { e164ForAccount } from './account-country.js';
import { mediaProfileFor } from './dial-leg.js';
import { forkableBindings } from './ring-bindings.js';

/** A PSTN number goes out by the routes table (dial-pstn.ts); an extension rings its registered contacts. */
export type ResolvedLeg =
  | { kind: 'pstn'; number: string; plan: OutboundPlan; transport: 'UDP' }
  | { kind: 'sip'; bindings: { contact: string; target: Target; route?: string[] }[]; transport: Target['transport'] };

/** A target ready to ring: where, (a PSTN number) its admitted CDR, and whether to detect who answers it. */
export interface PreparedLeg {
  leg: ResolvedLeg;
  child?: ChildLeg;
  detection?: MachineDetectionRequest;
}

/**
 * Why a target is not rung: `reason` is DIAL.0300's (NUMBER_*, an admission code); `silent` when the target was
 * blocked by the allowlist (DIAL.0403 already said so, and a one-target Dial emits no DIAL.0300 for it).
 */
export type Prepared = { ok: true; leg: PreparedLeg } | { ok: false; reason?: string; silent?: boolean };

/**
 * Everything a Dial target passes before it rings: a number read with the account's country,
 * the outbound allowlist (toll-fraud control: DIAL.0403), a route or a registered phone, the media profile of the
 * legs it is rung with (`profile`: one rtpengine offer serves every target of a Dial), and for a PSTN number the
 * admission of a new call of the account (its own CDR, rated and billed as outbound; spec, Limits). A refused leg
 * is never written, dialled nor billed. On-net extensions are not new calls (no CDR, not billed).
 */
export async function prepareLeg(
  d: FlowServices,
  call: LiveCall,
  target: DialTarget,
  presented: string,
  profile?: string,
): Promise<Prepared> {
  const row = call.row;
  const detection = target.kind === 'number' ? numberDetection(target.machineDetection) : undefined;
  if (target.kind === 'number') {
    const read = await e164ForAccount(d, row.account_id, target.number);
    if (!read.ok) return { ok: false, reason: read.code };
    target = { kind: 'number', number: read.e164 };
    const verdict = await checkDestination(d.db, row.account_id, target.number);
    if (!verdict.allowed) {
      await call.life.emit(EventCodes.dialBlocked, { to: target.number, reason: verdict.reason });
      return { ok: false, silent: true };
    }
  }
  const leg = await resolveTarget(d, row.account_id, target);
  if (!leg || !d.media.hasSession(row.id)) return { ok: false };
  if (profile !== undefined && mediaProfileFor(leg.transport).profile !== profile) {
    d.log.info({ call: row.sid, target }, 'Dial: target needs another media profile than the first; not rung');
    return { ok: false };
  }
  if (leg.kind === 'sip') return { ok: true, leg: { leg } };
  try {
    const child = await d.admission.admit({ accountId: row.account_id, to: leg.number }, () =>
      d.openChildLeg(call, presented, leg.number),
    );
    return { ok: true, leg: { leg, child, ...(detection ? { detection } : {}) } };
  } catch (e) {
    if (!(e instanceof AdmissionRefusedError)) throw e;
    d.log.info({ call: row.sid, to: leg.number, code: e.code }, 'Dial leg refused by admission');
    return { ok: false, reason: e.code };
  }
}

async function resolveTarget(d: FlowServices, accountId: string, target: DialTarget): Promise<ResolvedLeg | undefined> {
  if (target.kind === 'number') {
    const plan = await d.sip.trunks.outboundPlan(target.number);
    return plan.targets.length > 0 ? { kind: 'pstn', number: target.number, plan, transport: 'UDP' } : undefined;
  }
  if (target.kind !== 'extension') return undefined; // other nouns (a queue ...) are handled before this
  // Every registered phone of the extension rings (ring-bindings.ts).
  const bindings = forkableBindings((await d.locator?.lookup(accountId, target.extension)) ?? []);
  return bindings.length > 0 ? { kind: 'sip', bindings, transport: bindings[0]!.target.transport } : undefined;
}

/** Closes an admitted leg's CDR that is still open (never rung, or rung and lost); the first end wins. */
export async function closeLeg(p: PreparedLeg | undefined): Promise<void> {
  if (p?.child && !p.child.life.isEnded) await p.child.end(ReasonCodes.carrierFailure).catch(() => undefined);
}

/**
 * A <Number>'s machineDetection as the detector takes it: always asynchronous (TwiML's rule for a dialled number:
 * the parties are bridged at once and the verdict goes to amdStatusCallback).
 */
function numberDetection(m: NumberMachineDetection | undefined): MachineDetectionRequest | undefined {
  if (!m) return undefined;
  const params = Object.fromEntries(
    Object.entries({
      timeoutMs: m.timeoutMs,
      greetingMs: m.greetingMs,
      endSilenceMs: m.endSilenceMs,
      initialSilenceMs: m.initialSilenceMs,
    }).filter(([, v]) => v !== undefined),
  );
  return {
    mode: m.mode,
    params,
    async: true,
    ...(m.statusCallback === undefined ? {} : { statusCallbackUrl: m.statusCallback }),
  };
}
