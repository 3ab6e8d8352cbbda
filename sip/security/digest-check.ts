import { verifyDigestResponse, type DigestCredentials, type DigestSecret } from './digest-equaliser.js';
import type { AuthEvent, SecurityGate } from './gate.js';

/**
 * Steps 3 to 6 of the registrar's recipe in docs/security.md in one call, so their order cannot be got wrong:
 * ask for a lockout, verify (against the dummy secret when the user is unknown or locked, so the work is the same),
 * report the outcome. True means authenticated; false means answer exactly as for any other failure.
 * `secret` is undefined when the user does not exist. Nonce freshness is checked before this (a stale nonce is
 * re-challenged, not counted).
 */
export function checkDigestAuth(
  gate: SecurityGate,
  ev: AuthEvent & { credentials: DigestCredentials; secret: DigestSecret | undefined },
): boolean {
  const who: AuthEvent = { source: ev.source, account: ev.account, user: ev.user };
  const locked = gate.isLockedOut(who);
  const ok = verifyDigestResponse(ev.credentials, locked ? undefined : ev.secret);
  if (ok) gate.authSucceeded(who);
  else gate.authFailed(who);
  return ok;
}
