import { AdmissionRefusedError, checkDestination } from '../billing/index.js';
import { EventCodes, ReasonCodes, type ReasonCode } from '../events/index.js';
import type { Responder, SipRequest } from '../sip/stack/index.js';
import { findEndUserByExtension, listOwnedNumbers, type EndUserRow } from '../store/index.js';
import type { BridgedCall } from './bridged-call.js';
import type { ChildLeg } from './child-leg.js';
import { dialLeg, mediaProfileFor, type DialLegOutcome } from './flows/dial-leg.js';
import { dialPstn } from './flows/dial-pstn.js';
import { raceForks } from './flows/fork.js';
import type { FlowServices } from './flows/flow-services.js';
import type { LocatingServices } from './call-services.js';
import { failureReason } from './flows/originate.js';
import { bridgePhone, type BridgeTarget } from './flows/phone-bridge.js';
import { leaveVoicemail } from './voicemail/deposit.js';

/** Why a call to an end-user is taken elsewhere than its phones. */
export type DivertCause = 'dnd' | 'always' | 'offline' | 'busy' | 'no-answer';

/** The ring time of an extension without no-answer handling (what every extension rang before per-user call handling). */
export const DEFAULT_RING_SECONDS = 30;

/** What call handling is handed: the flows' services with the location service. */
type Forwarding = LocatingServices<FlowServices>;

/** The call being handled: the caller's INVITE (still unanswered), its call, and who rang whom. */
export interface HandledCall {
  req: SipRequest;
  srv: Responder;
  call: BridgedCall;
  /** The caller's extension and the SIP domain it wrote (From of the legs placed for it). */
  callerExtension: string;
  domain: string;
}

/**
 * Per end-user call handling (docs/api.md "Call handling"): do-not-disturb, forward always / on
 * busy / on no answer after `no_answer_seconds`, to an extension of the account or an E.164 number, and voicemail
 * (calls/voicemail/) for calls nobody answered. Built from the callee's row the flow already read: an end-user
 * with none of it set costs nothing (`of` gives undefined and the call rings as it always did).
 */
export class CallHandling {
  private constructor(
    private readonly d: Forwarding,
    readonly callee: EndUserRow,
  ) {}

  static of(d: Forwarding, callee: EndUserRow): CallHandling | undefined {
    const any =
      callee.dnd ||
      callee.voicemail_enabled ||
      Boolean(callee.forward_always || callee.forward_busy || callee.forward_no_answer);
    return any ? new CallHandling(d, callee) : undefined;
  }

  /** How long the callee's phones ring before no-answer handling takes the call. */
  get ringSeconds(): number {
    const u = this.callee;
    return u.forward_no_answer || u.voicemail_enabled ? u.no_answer_seconds : DEFAULT_RING_SECONDS;
  }

  /** The call is diverted before any phone rings: DND, forward always, or no phone registered with a fallback. */
  causeBeforeRinging(registeredPhones: number): DivertCause | undefined {
    const u = this.callee;
    if (u.dnd) return 'dnd';
    if (u.forward_always) return 'always';
    if (registeredPhones === 0 && (u.forward_no_answer || u.voicemail_enabled)) return 'offline';
    return undefined;
  }

  /** For BridgeTarget.onUnanswered: the phones were busy or did not answer. */
  unanswered(c: HandledCall, reason: ReasonCode): Promise<boolean> {
    if (reason === ReasonCodes.canceled) return Promise.resolve(false);
    return this.divert(c, reason === ReasonCodes.busy ? 'busy' : 'no-answer');
  }

  /**
   * Takes the ringing caller to the forward target for `cause`, else to voicemail; a forward nobody answers falls
   * to voicemail too. False when there is neither (the flow refuses the call as it would have). Before ringing
   * (DND) with nothing to go to, the caller is refused busy here.
   */
  async divert(c: HandledCall, cause: DivertCause): Promise<boolean> {
    const target = this.#forwardTarget(cause);
    if (target) {
      await c.call.life.emit(EventCodes.callForwarded, { cause, to: target });
      const kind = /^\+\d{6,15}$/.test(target) ? 'number' : 'extension';
      await (kind === 'number' ? this.#toNumber(c, target) : this.#toExtension(c, target));
      return true;
    }
    if (this.callee.voicemail_enabled) {
      await leaveVoicemail(this.d, c, this.callee);
      return true;
    }
    if (cause !== 'dnd') return false;
    c.srv.send(486, 'Busy Here');
    await c.call.end(ReasonCodes.busy);
    return true;
  }

  #forwardTarget(cause: DivertCause): string | null {
    const u = this.callee;
    if (cause === 'always') return u.forward_always;
    if (cause === 'busy' || cause === 'dnd') return u.forward_busy;
    return u.forward_no_answer;
  }

  /** A forward nobody took: the callee's mailbox if it has one. */
  #fallback(c: HandledCall): BridgeTarget['onUnanswered'] {
    if (!this.callee.voicemail_enabled) return undefined;
    return async (reason) => {
      if (reason === ReasonCodes.canceled) return false;
      await leaveVoicemail(this.d, c, this.callee);
      return true;
    };
  }

  /**
   * Rings every phone of the other extension with the newest one's media profile at once, as a direct call does
   * (flows/fork.ts); one level: its own forwarding is not followed, so forwards cannot loop.
   */
  async #toExtension(c: HandledCall, ext: string): Promise<void> {
    const d = this.d;
    const accountId = c.call.life.row.account_id;
    const other = await findEndUserByExtension(d.db, accountId, ext, { activeOnly: true });
    const all = other ? await d.locator.lookup(accountId, ext) : [];
    const side = all[0] && mediaProfileFor(all[0].target.transport);
    const bindings = all.filter((b) => mediaProfileFor(b.target.transport).profile === side?.profile);
    const onUnanswered = this.#fallback(c);
    if (!side) {
      if (!(onUnanswered && (await onUnanswered(ReasonCodes.extensionOffline)))) await refuse(c, 480);
      return;
    }
    await bridgePhone(d, c.req, c.srv, c.call, {
      continued: true,
      side,
      onUnanswered,
      dial: (o) => {
        let rang = false;
        const onRinging = () => {
          if (!rang) o.onRinging(); // the caller hears one 180, however many phones ring
          rang = true;
        };
        const forks = bindings.map(
          (b) => (signal: AbortSignal) =>
            dialLeg(d, {
              target: { uri: b.contact, proxy: b.target, transport: b.target.transport, route: b.route },
              from: `<sip:${c.callerExtension}@${c.domain}>`,
              to: `<sip:${ext}@${c.domain}>`,
              sdp: o.sdp,
              timeoutSeconds: DEFAULT_RING_SECONDS,
              signal,
              onRinging,
            }),
        );
        return raceForks(forks, o.signal);
      },
    });
  }

  /**
   * A forward to the PSTN is an outbound call of the account (spec, Limits; like a Dial leg): the destination
   * allowlist, admission (balance, concurrency, CPS) and its own CDR with `parent_call_id`, rated and settled as
   * outbound. It presents the account's first active DID. Refused or unanswered: voicemail, else the caller hears
   * the failure.
   */
  async #toNumber(c: HandledCall, number: string): Promise<void> {
    const d = this.d;
    const row = c.call.life.row;
    const onUnanswered = this.#fallback(c);
    const fail = async (reason: ReasonCode, status: number) => {
      if (!(onUnanswered && (await onUnanswered(reason)))) await refuse(c, status, reason);
    };
    const [did] = (await listOwnedNumbers(d.db, row.account_id)).filter((n) => n.is_active);
    const verdict = await checkDestination(d.db, row.account_id, number);
    if (!did || !verdict.allowed) return fail(ReasonCodes.rejected, 403);
    let child: ChildLeg;
    try {
      child = await d.admission.admit({ accountId: row.account_id, to: number }, () =>
        d.openChildLeg(c.call, did.number, number),
      );
    } catch (e) {
      if (!(e instanceof AdmissionRefusedError)) throw e;
      d.log.info({ call: row.sid, to: number, code: e.code }, 'forward to a number refused by admission');
      return fail(ReasonCodes.rejected, 403);
    }
    let ended = false;
    const endChild = async (reason: ReasonCode) => {
      if (ended) return;
      ended = true;
      await child.end(reason).catch(() => undefined);
    };
    c.call.onEnd(() => void endChild(ReasonCodes.normalHangup));
    await child.life.initiated();
    try {
      await bridgePhone(d, c.req, c.srv, c.call, {
        continued: true,
        side: { profile: 'rtp' },
        onUnanswered,
        dial: async (o): Promise<DialLegOutcome> => {
          const leg = await dialPstn(d, {
            number,
            from: `<sip:${did.number}@${d.config.publicHost}>`,
            sdp: o.sdp,
            timeoutSeconds: 60,
            signal: o.signal,
            onRinging: () => {
              o.onRinging();
              void child.life.ringing();
            },
            onAttempt: async (code, data) => void (await child.life.emit(code, data)),
          });
          if (!leg.ok) {
            await endChild(failureReason(leg.error, leg.noAnswer));
            return leg;
          }
          if (await child.answered()) return leg;
          // A destination that cannot be rated is not carried for free.
          await leg.dialog.bye().catch(() => undefined);
          await endChild(ReasonCodes.rejected);
          return { ok: false, error: new Error('forward destination not rated'), noAnswer: false };
        },
      });
    } finally {
      await endChild(ReasonCodes.normalHangup);
    }
  }
}

/** The caller is refused with `status` and its call ends (unanswered, not billed). */
async function refuse(c: HandledCall, status: number, reason: ReasonCode = ReasonCodes.extensionOffline) {
  c.srv.send(status);
  await c.call.end(reason);
}
