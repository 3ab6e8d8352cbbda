/**
 * Warn, then cut: the live credit monitor tells the calls room, once per call, that the
 * account's allowance will run out in about its lead time, so the paying leg can hear "one minute left" before the
 * cut (BILL.0403) that follows at zero.
 *
 * When will the allowance run out? Time is billed in advance: a call commits its first block on answer and each
 * increment as it starts, and the cut comes at the first instant the account's live calls together have committed
 * more than the balance. So the moment is found by searching forward over whole seconds for the first one at which
 * `committedAt` exceeds the balance. The cheap estimate the monitor already has (balance less committed, over the
 * spending rate) is never later than that instant, so the search runs only for wallets whose estimate is inside
 * the longest lead time of their calls: a quiet wallet costs nothing more per tick.
 */

/** What a warned call is told, and what the event (BILL.0311) carries. */
export interface CreditWarning {
  accountId: string;
  /** Whole seconds until the cut, as projected now. */
  secondsLeft: number;
  /** The account's lead time (seconds) that triggered it. */
  leadSeconds: number;
  /** The account's language for the notice (`en`, `sw`). */
  language: string;
}

/** Hands a warning to the calls room (which plays it to the paying leg). Must not throw. */
export type CreditWarn = (callId: string, warning: CreditWarning) => void;

/** The longest horizon the search looks ahead; lead times are bounded below it (0..600 s). */
export const MAX_WARNING_LEAD_SECONDS = 600;

/**
 * Seconds from now until the account's live calls have committed more than `balanceCents`, searching whole seconds
 * up to `horizonSeconds`; Infinity when that is not within the horizon. `committedAt(ms)` is what the calls would
 * have committed at that instant (non-decreasing in time).
 */
export function secondsUntilCut(
  committedAt: (atMs: number) => number,
  balanceCents: number,
  nowMs: number,
  horizonSeconds: number,
): number {
  if (committedAt(nowMs) > balanceCents) return 0;
  if (committedAt(nowMs + horizonSeconds * 1000) <= balanceCents) return Infinity;
  // Binary search for the first whole second at which the commitment exceeds the balance.
  let lo = 0; // not exceeded at lo
  let hi = horizonSeconds; // exceeded at hi
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (committedAt(nowMs + mid * 1000) > balanceCents) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** A call's part in the warning: its lead time, whether it was warned, and whether it can still be. */
export interface WarnableCall {
  callId: string;
  warnLeadSeconds: number;
  warned: boolean;
  language: string;
}

/**
 * One wallet's pass: given the cheap estimate, decides which calls to warn now. Each call is warned at most once;
 * a call whose lead time is 0 never is. Returns the projected seconds left when it had to search (for tests).
 */
export function warnCalls(
  o: {
    accountId: string;
    calls: WarnableCall[];
    estimateSeconds: number;
    balanceCents: number;
    nowMs: number;
    committedAt: (atMs: number) => number;
  },
  warn: CreditWarn,
): number | undefined {
  let lead = 0;
  for (const c of o.calls) if (!c.warned) lead = Math.max(lead, c.warnLeadSeconds);
  if (lead <= 0 || o.estimateSeconds > lead) return undefined;
  const left = secondsUntilCut(o.committedAt, o.balanceCents, o.nowMs, Math.min(lead, MAX_WARNING_LEAD_SECONDS) + 1);
  for (const c of o.calls) {
    if (c.warned || c.warnLeadSeconds <= 0 || left > c.warnLeadSeconds || left <= 0) continue;
    c.warned = true;
    warn(c.callId, { accountId: o.accountId, secondsLeft: left, leadSeconds: c.warnLeadSeconds, language: c.language });
  }
  return left;
}
