import { AdmissionRefusedError } from '../../billing/index.js';
import { classifyDialled, NumberFormatError, type Dialled } from '../../numbers/index.js';
import { EventCodes, ReasonCodes } from '../../events/index.js';
import type { EndUserIdentity } from '../../sip/index.js';
import type { Responder, SipRequest, Target } from '../../sip/stack/index.js';
import {
  accountIdOfSipLabel,
  findEndUserAnyAccount,
  findEndUserByExtension,
  getAccount,
  insertCall,
  listOwnedNumbers,
  nowIso,
  type CallRow,
  type Db,
  type NewCall,
} from '../../store/index.js';
import type { FlowDeps } from './flow-deps.js';
import { fromUser, mediaProfileFor } from './dial-leg.js';
import { forkableBindings, ringBindings } from './ring-bindings.js';
import { bridgePhone } from './phone-bridge.js';
import { runEmergency } from './emergency.js';
import { NOTICES, notice, noticeLanguageOf } from '../../media/index.js';
import { isBalanceCode, runBalanceCall } from '../prepaid/balance-call.js';
import { accountCountry } from './account-country.js';
import { recordRefusedCall, refuseAdmission } from './refusal.js';
import { CALLER_LEG, type LiveCall } from '../live-call.js';
import type { BridgedCall } from '../bridged-call.js';
import { NO_OUTBOUND_HANDLER } from '../unanswered-leg.js';
import { uasLeg } from './uas-leg.js';
import { CallHandling } from '../forwarding.js';
import { isMailboxCode, runMailbox } from '../voicemail/mailbox.js';
import type { ChildLeg } from '../child-leg.js';

/** A registered contact of an end-user, as the location service holds it. */
export interface ContactBinding {
  contact: string;
  target: Target;
  /** The binding's Path (RFC 3327): the Route set of requests to it, through the front holding its connection. */
  route?: string[];
}

/** The location service as the call engine sees it (sip/location.ts). */
export interface EndUserLocator {
  lookup(accountId: string, extension: string): ContactBinding[];
  /** A phone token's `max_concurrent`: false when the token already has that many calls up. */
  acquireCallSlot?(tokenId: string, max: number): boolean;
  releaseCallSlot?(tokenId: string): void;
}

export interface EndUserFlowDeps extends FlowDeps {
  locator: EndUserLocator;
  trackIvr: (row: CallRow) => LiveCall;
  /** `unbilled`: kept off the credit monitor (the balance short code, calls/prepaid/balance-call.ts). */
  trackBridge: (row: CallRow, opts?: { unbilled?: boolean }) => BridgedCall;
  /** A forward to a number's outbound CDR (calls/forwarding.ts). */
  openChildLeg?: (parent: BridgedCall, from: string, to: string) => Promise<ChildLeg>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The account a Request-URI names by its SIP domain (`<account-uuid>` or `<account-uuid>.<anything>`). */
export function accountOfDomain(host: string | undefined): string | undefined {
  const label = (host ?? '').split('.')[0];
  return UUID.test(label) ? label.toLowerCase() : undefined;
}

/** END.0501's notice in English; the caller hears it in the account's language (media/notices.ts). */
export const NO_OUTBOUND_HANDLER_NOTICE: string = NOTICES.noOutboundHandler.en;

/**
 * A call from an authenticated end-user's phone: to an on-net extension of the same account (`internal`), or to
 * the PSTN, which always goes through the account's voice_outbound webhook (spec: the service never dials the
 * PSTN by itself).
 */
export async function runEndUserCall(
  d: EndUserFlowDeps,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
): Promise<void> {
  // The phone token's max_concurrent holds across the end-user's calls (spec: Phone token).
  if (d.locator.acquireCallSlot && !d.locator.acquireCallSlot(who.tokenId, who.maxConcurrent)) {
    srv.send(486, 'Busy Here');
    return;
  }
  let released = false;
  const release = () => {
    if (!released) d.locator.releaseCallSlot?.(who.tokenId);
    released = true;
  };
  try {
    await routeEndUserCall(d, req, srv, who, release);
  } finally {
    release();
  }
}

async function routeEndUserCall(
  d: EndUserFlowDeps,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  release: () => void,
): Promise<void> {
  const uri = req.uri as { user?: string; host?: string };
  const caller = fromUser(req);
  const domainAccount = accountOfDomain(uri.host);
  if (isMailboxCode(uri.user)) return runMailbox(d, req, srv, who, release); // *97 (calls/voicemail/mailbox.ts)
  const balanceCode = d.config.prepaid.balanceShortCode; // *100# (calls/prepaid/balance-call.ts)
  if (isBalanceCode(uri.user, balanceCode)) return runBalanceCall(d, req, srv, who, balanceCode, release);
  const dialled = await readDialled(d, who.accountId, uri.user ?? '');
  if (!dialled) {
    // RFC 3261 §21.4.22: not a number this switch can complete (a short code, letters, a wrong length).
    srv.send(484, 'Address Incomplete');
    return;
  }
  // Emergency numbers come first (never an extension) and skip every refusal below (docs/numbers.md).
  if (dialled.kind === 'emergency') return runEmergency(d, req, srv, who, dialled.number, release);
  if (dialled.kind === 'extension') {
    const base: NewCall = {
      account_id: who.accountId,
      direction: 'internal',
      from_number: who.extension,
      to_number: dialled.extension,
      end_user_id: who.endUserId,
    };
    // The domain may name the account by its readable label too (issue 19): another account's label is refused alike.
    const named = domainAccount ?? (await accountIdOfSipLabel(d.db, (uri.host ?? '').split('.')[0] ?? ''));
    if (named && named !== who.accountId.toLowerCase()) {
      // The CDR is written before the phone hears the answer, so a client reading it at once finds it.
      await recordRefusedCall(d.db, d.events, base, ReasonCodes.crossAccount, ReasonCodes.crossAccount);
      srv.send(403, 'Forbidden');
      return;
    }
    return runInternal(d, req, srv, who, dialled.extension, base, release);
  }
  return runToPstn(d, req, srv, who, caller, dialled.e164, release);
}

/**
 * The Request-URI's user part read with the account's dial plan (numbers/): its country for national numbers
 * (`0712 345 678` is `+254712345678` in Kenya), the platform's emergency numbers. Undefined when it is no number.
 */
async function readDialled(d: EndUserFlowDeps, accountId: string, user: string): Promise<Dialled | undefined> {
  let text: string;
  try {
    text = decodeURIComponent(user);
  } catch {
    return undefined;
  }
  const country = await accountCountry(d, accountId);
  try {
    return classifyDialled(text, { country, emergencyNumbers: d.config.numbers?.emergencyNumbers });
  } catch (e) {
    if (!(e instanceof NumberFormatError)) throw e;
    d.log.info({ account: accountId, code: e.code }, 'end-user dialled something that is not a number');
    return undefined;
  }
}

async function runInternal(
  d: EndUserFlowDeps,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  ext: string,
  base: NewCall,
  release: () => void,
) {
  const domain = (req.uri as { host?: string }).host ?? d.config.publicHost;
  const callee = await findExtension(d.db, who.accountId, ext);
  if (!callee) {
    // The CDR is written before the phone hears the answer, so a client reading it at once finds it.
    await recordRefusedCall(d.db, d.events, base, ReasonCodes.unallocatedNumber);
    srv.send(404, 'Not Found');
    return;
  }
  const bindings = d.locator.lookup(who.accountId, ext);
  // DND, forwarding and voicemail of the callee (calls/forwarding.ts): undefined when it has none of them set.
  const handling = CallHandling.of(d, callee);
  const divertFirst = handling?.causeBeforeRinging(bindings.length);
  if (bindings.length === 0 && !divertFirst) {
    // The CDR is written before the phone hears the answer, so a client reading it at once finds it.
    await recordRefusedCall(d.db, d.events, base, ReasonCodes.extensionOffline, ReasonCodes.extensionOffline);
    srv.send(480, 'Temporarily Unavailable');
    return;
  }
  let row: CallRow;
  try {
    row = await d.admission.admit({ accountId: who.accountId }, () =>
      insertCall(d.db, { ...base, started_at: nowIso() }),
    );
  } catch (e) {
    if (e instanceof AdmissionRefusedError) return refuseAdmission(d.db, d.events, srv, base, e);
    throw e;
  }
  const call = d.trackBridge(row);
  call.onEnd(release); // the token's slot frees as the call starts ending, before the BYEs go out
  const handled = { req, srv, call, callerExtension: who.extension, domain };
  if (handling && divertFirst) {
    await call.life.initiated();
    srv.signal.addEventListener('abort', () => void call.end(ReasonCodes.canceled), { once: true });
    await handling.divert(handled, divertFirst);
    return void (await call.life.ended);
  }
  // Every registered phone of the extension rings at once; the first to answer takes the call (ring-bindings.ts).
  const forks = forkableBindings(bindings);
  await bridgePhone(d, req, srv, call, {
    side: mediaProfileFor(forks[0]!.target.transport),
    dial: (o) =>
      ringBindings(d, forks, {
        // The account's SIP domain as the caller wrote it (a bare uuid is not always a valid host: RFC 3261 §25).
        from: `<sip:${who.extension}@${domain}>`,
        to: `<sip:${ext}@${domain}>`,
        sdp: o.sdp,
        timeoutSeconds: handling?.ringSeconds ?? 30,
        signal: o.signal,
        onRinging: o.onRinging,
      }),
    onUnanswered: handling && ((reason) => handling.unanswered(handled, reason)),
  });
}

async function runToPstn(
  d: EndUserFlowDeps,
  req: SipRequest,
  srv: Responder,
  who: EndUserIdentity,
  caller: string,
  to: string,
  release: () => void,
) {
  const account = await getAccount(d.db, who.accountId);
  const dids = (await listOwnedNumbers(d.db, account.id)).filter((n) => n.is_active);
  const did = dids[0];
  const base: NewCall = {
    account_id: account.id,
    direction: 'outbound',
    from_number: did?.number ?? caller,
    to_number: to,
    end_user_id: who.endUserId,
    number_id: did?.id ?? null,
  };
  if (!did) {
    // The CDR is written before the phone hears the answer, so a client reading it at once finds it.
    await recordRefusedCall(d.db, d.events, base, ReasonCodes.noDid, ReasonCodes.noDid);
    srv.send(403, 'Forbidden');
    return;
  }
  const url = did.webhook_voice_outbound || account.webhook_voice_outbound;
  let row: CallRow;
  try {
    row = await d.admission.admit({ accountId: account.id, to }, () =>
      insertCall(d.db, { ...base, webhook_url: url || null, started_at: nowIso() }),
    );
  } catch (e) {
    if (e instanceof AdmissionRefusedError) return refuseAdmission(d.db, d.events, srv, base, e);
    throw e;
  }
  const call = d.trackIvr(row);
  call.onEnd(release);
  const endUser = await findEndUserAnyAccount(d.db, who.endUserId);
  if (endUser) {
    call.setEndUser({
      uuid: endUser.id,
      email: endUser.email,
      display_name: endUser.display_name,
      extension_number: endUser.extension_number,
    });
  }
  await call.life.initiated();
  srv.signal.addEventListener('abort', () => void call.end(ReasonCodes.canceled), { once: true });
  if (!url) {
    // Spec: the caller hears a short notice and the call ends with END.0501. The notice is early media (183 with
    // SDP) and the call is refused after it, so it is never answered nor billed; call.no_outbound_handler is
    // its own event, before CALL.0400.
    call.answerWhenNeeded(uasLeg(d, call, req, srv, { callerSide: mediaProfileFor(req.source?.transport) }));
    await call.life.emit(EventCodes.noOutboundHandler, { reasonCode: ReasonCodes.noOutboundHandler });
    const n = notice('noOutboundHandler', noticeLanguageOf(account.language));
    await call.refuseWithNotice(n.text, ReasonCodes.noOutboundHandler, NO_OUTBOUND_HANDLER, n.language);
    return;
  }
  try {
    const sdp = await d.media.answerIvr(row.id, CALLER_LEG, req.body.toString(), {
      callerSide: mediaProfileFor(req.source?.transport),
    });
    if (call.isEnding) return;
    // The caller's BYE is watched from the 200 on, not from its ACK (see uas-leg.ts).
    await d.sip.ua.createUAS(req, { localSdp: sdp, onConfirmed: (dialog) => call.attachDialog(dialog) });
    await call.answered();
  } catch (e) {
    d.log.warn({ err: e, call: row.sid }, 'end-user call could not be answered');
    srv.send(500, 'Server Internal Error');
    await call.end(call.isEnding ? ReasonCodes.canceled : ReasonCodes.carrierFailure);
    return;
  }
  await call.runVerbs({ url });
}

function findExtension(db: Db, accountId: string, ext: string) {
  return findEndUserByExtension(db, accountId, ext, { activeOnly: true });
}
