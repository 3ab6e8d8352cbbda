import type { CallServices } from '../call-services.js';
import { dialLeg, mediaProfileFor, type DialLegOptions } from './dial-leg.js';
import { raceForks, type ForkOutcome } from './fork.js';
import type { Target } from '../../sip/stack/index.js';

/** A registered contact of an end-user (end-user.ts ContactBinding). */
type ContactBinding = { contact: string; target: Target; route?: string[] };

/**
 * The bindings of an extension that one call rings together: every current registration whose media profile
 * is the newest one's (plain RTP, SRTP, WebRTC). One rtpengine offer serves all the forks, so a phone that needs
 * another profile than the newest (a browser beside a desk phone) is left out of that call; the newest always rings.
 */
export function forkableBindings(bindings: readonly ContactBinding[]): ContactBinding[] {
  const newest = bindings[0];
  if (!newest) return [];
  const profile = mediaProfileFor(newest.target.transport).profile;
  return bindings.filter((b) => mediaProfileFor(b.target.transport).profile === profile);
}

/**
 * Rings every binding at once (fork.ts): the first to answer wins, the others are CANCELled with the
 * "Call completed elsewhere" Reason, and the call fails only when all did. `onRinging` is told once.
 */
export function ringBindings(
  d: CallServices,
  bindings: readonly ContactBinding[],
  o: Omit<DialLegOptions, 'target'>,
): Promise<ForkOutcome> {
  let rang = false;
  const onRinging = () => {
    if (rang) return;
    rang = true;
    o.onRinging?.();
  };
  const forks = bindings.map(
    (b) => (signal: AbortSignal) =>
      dialLeg(d, {
        ...o,
        target: { uri: b.contact, proxy: b.target, transport: b.target.transport, route: b.route },
        signal,
        onRinging,
      }),
  );
  return raceForks(forks, o.signal);
}
