import { COMPLETED_ELSEWHERE, SipCanceledError, SipError, type Dialog } from '../../sip/stack/index.js';
import type { DialLegOutcome } from './dial-leg.js';

/** One branch of a forked call: rings its target until answered, failed, or `signal` cancels it. */
export type Fork = (signal: AbortSignal) => Promise<DialLegOutcome>;

/** How a set of forks ended: the first to answer (its index), or the failure chosen to stand for all of them. */
export type ForkOutcome =
  | { ok: true; dialog: Dialog; index: number }
  | { ok: false; error: unknown; noAnswer: boolean; outcomes: DialLegOutcome[] };

/**
 * Rings every fork at once, as a forking proxy does in a B2BUA (RFC 3261 §16.7): the first 2xx wins and the others
 * are CANCELled with `Reason: SIP;cause=200;text="Call completed elsewhere"` (RFC 3326); a fork that fails (486,
 * 603, no answer, unreachable) does not end the others; a 2xx that arrives after the winner is ACKed and hung up
 * (the stack does it for a cancelled INVITE; a 2xx that races the winner is hung up here). When every fork failed,
 * the outcome is the best of their failures (bestFailure). `signal` cancels them all (the caller gave up).
 */
export async function raceForks(forks: readonly Fork[], signal?: AbortSignal): Promise<ForkOutcome> {
  if (forks.length === 0)
    return { ok: false, error: new SipError('NO_TARGET', 404, 'nothing to ring'), noAnswer: false, outcomes: [] };
  const controls = forks.map(() => new AbortController());
  const cancelAll = () => controls.forEach((c) => c.abort(signal?.reason));
  signal?.addEventListener('abort', cancelAll, { once: true });
  if (signal?.aborted) cancelAll();
  let winner: { dialog: Dialog; index: number } | undefined;
  const outcomes: DialLegOutcome[] = [];
  try {
    await new Promise<void>((resolve) => {
      let left = forks.length;
      forks.forEach((ring, index) => {
        const settled = (outcome: DialLegOutcome) => {
          outcomes[index] = outcome;
          if (outcome.ok) {
            if (winner) {
              void outcome.dialog.bye().catch(() => undefined); // answered in the same instant as the winner
            } else {
              winner = { dialog: outcome.dialog, index };
              controls.forEach((c, i) => i !== index && c.abort(COMPLETED_ELSEWHERE));
              resolve();
            }
          }
          if (--left === 0) resolve();
        };
        ring(controls[index]!.signal).then(settled, (error: unknown) => settled({ ok: false, error, noAnswer: false }));
      });
    });
  } finally {
    signal?.removeEventListener('abort', cancelAll);
  }
  if (winner) return { ok: true, ...winner };
  return { ok: false, ...bestFailure(outcomes), outcomes };
}

/** A failed fork's SIP status: its response's, 408 for our own ring timeout, 487 for a cancel, 500 otherwise. */
function statusOf(o: Extract<DialLegOutcome, { ok: false }>): number {
  if (o.noAnswer) return 408;
  if (o.error instanceof SipCanceledError) return 487;
  return o.error instanceof SipError ? o.error.status : 500;
}

/**
 * The failure that stands for a set of failed forks, after RFC 3261 §16.7 step 6: a 6xx (declined everywhere)
 * first; then busy when every fork was busy (486/600); then no answer when any fork rang out (a person who did not
 * pick up one phone is "no answer", not "busy", when the other was busy: the caller hears what a PBX user expects);
 * then the lowest response class (4xx before 5xx), and within it the lowest status. A cancel by the caller stands
 * for all (the caller gave up).
 */
export function bestFailure(outcomes: readonly DialLegOutcome[]): { error: unknown; noAnswer: boolean } {
  const failed = outcomes.filter((o): o is Extract<DialLegOutcome, { ok: false }> => !o.ok);
  if (failed.length === 0) return { error: new SipError('NO_TARGET', 404, 'nothing to ring'), noAnswer: false };
  const pick = (o: Extract<DialLegOutcome, { ok: false }>) => ({ error: o.error, noAnswer: o.noAnswer });
  const canceled = failed.find((o) => statusOf(o) === 487 && !o.noAnswer);
  if (canceled && failed.every((o) => statusOf(o) === 487 || o.noAnswer)) return pick(canceled);
  const global = failed.find((o) => statusOf(o) >= 600);
  if (global) return pick(global);
  if (failed.every((o) => statusOf(o) === 486)) return pick(failed[0]!);
  const rangOut = failed.find((o) => o.noAnswer);
  if (rangOut) return pick(rangOut);
  const ranked = [...failed].sort((a, b) => rank(statusOf(a)) - rank(statusOf(b)));
  return pick(ranked[0]!);
}

/** Lower is better: 4xx before 5xx before anything else; a cancel last (it says nothing of the callee). */
function rank(status: number): number {
  if (status === 487) return 10_000;
  if (status >= 400 && status < 500) return status;
  if (status >= 500 && status < 600) return 1_000 + status;
  return 5_000 + status;
}
