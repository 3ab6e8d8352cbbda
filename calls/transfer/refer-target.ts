import { checkDestination } from '../../billing/index.js';
import { TransferRefusals, type TransferRefusal } from '../../events/index.js';
import { classifyDialled, NumberFormatError } from '../../numbers/index.js';
import { accountOfHost, type OutboundPlan } from '../../sip/index.js';
import type { Uri } from '../../sip/stack/index.js';
import { findEndUserByExtension } from '../../store/index.js';
import { accountCountry } from '../flows/account-country.js';
import type { ContactBinding } from '../call-services.js';
import type { TransferContext } from './transfer-steps.js';

/** Longest user part of a Refer-To read as a number or an extension. */
const MAX_TARGET_USER = 32;

/** Where a REFER may send the other party: an extension of the same account, or a number it may call. */
export type ReferTarget =
  | { ok: true; kind: 'extension'; extension: string; endUserId: string; binding: ContactBinding }
  | { ok: true; kind: 'number'; e164: string; plan: OutboundPlan }
  | { ok: false; status: 400 | 403 | 404 | 480; reason: TransferRefusal };

const refuse = (status: 400 | 403 | 404 | 480, reason: TransferRefusal): ReferTarget => ({ ok: false, status, reason });

/**
 * A Refer-To URI is hostile input: the switch never sends anything to the host it names. Only its user part is
 * read, with the account's dial plan, and only when the host names the account (`<account-uuid>[.anything]`, the
 * domain phones register with) or is a host the transferring phone used in the call (its From or To) or the
 * switch itself; `tel:` URIs are numbers. An extension must be an
 * active end-user of the same account with a registered phone; a number must pass the account's destination
 * allowlist and have a route (admission is asked when the leg is placed, as for any outbound call of the account).
 * Emergency numbers are not transfer targets.
 */
export async function resolveReferTarget(
  d: TransferContext,
  accountId: string,
  uri: Uri,
  ownDomains: readonly string[],
): Promise<ReferTarget> {
  let user: string | undefined;
  if (uri.scheme === 'tel' && 'number' in uri) user = uri.number;
  else if ((uri.scheme === 'sip' || uri.scheme === 'sips') && 'host' in uri) {
    const host = uri.host.toLowerCase();
    const named = accountOfHost(host);
    // Another account's domain is refused; so is a host that is neither this account's nor one the phone used.
    if (named ? named !== accountId.toLowerCase() : !ownDomains.some((h) => h.toLowerCase() === host))
      return refuse(403, TransferRefusals.notAllowed);
    user = uri.user;
  }
  if (!user || user.length > MAX_TARGET_USER * 3) return refuse(400, TransferRefusals.malformed);
  let text: string;
  try {
    text = decodeURIComponent(user);
  } catch {
    return refuse(400, TransferRefusals.malformed);
  }
  if (text.length > MAX_TARGET_USER) return refuse(400, TransferRefusals.malformed);
  let dialled;
  try {
    const country = await accountCountry(d, accountId);
    dialled = classifyDialled(text, { country, emergencyNumbers: d.config.numbers?.emergencyNumbers });
  } catch (e) {
    if (e instanceof NumberFormatError) return refuse(404, TransferRefusals.unknown);
    throw e;
  }
  if (dialled.kind === 'emergency') return refuse(403, TransferRefusals.notAllowed);
  if (dialled.kind === 'extension') {
    const user = await findEndUserByExtension(d.db, accountId, dialled.extension, { activeOnly: true });
    if (!user) return refuse(404, TransferRefusals.unknown);
    const [binding] = await d.locator.lookup(accountId, dialled.extension);
    if (!binding) return refuse(480, TransferRefusals.offline);
    return { ok: true, kind: 'extension', extension: dialled.extension, endUserId: user.id, binding };
  }
  const verdict = await checkDestination(d.db, accountId, dialled.e164);
  if (!verdict.allowed) return refuse(403, TransferRefusals.notAllowed);
  const plan = await d.sip.trunks.outboundPlan(dialled.e164);
  if (plan.targets.length === 0) return refuse(404, TransferRefusals.unknown);
  return { ok: true, kind: 'number', e164: dialled.e164, plan };
}
