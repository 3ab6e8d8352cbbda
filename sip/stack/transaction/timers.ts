/**
 * Every transaction timer derived from T1, T2 and T4 in one place (RFC 3261 §17, table 4 of appendix A).
 * Tests shrink nothing here: they inject a ManualClock and advance it by these values.
 */
export interface TimerSettings {
  /** RTT estimate, default 500 ms. */
  T1: number;
  /** Longest retransmit interval for non-INVITE requests and INVITE responses, default 4 s. */
  T2: number;
  /** Longest time a message stays in the network, default 5 s. */
  T4: number;
}
export const DEFAULT_TIMER_SETTINGS: TimerSettings = { T1: 500, T2: 4000, T4: 5000 };

export interface TransactionTimers {
  T1: number;
  T2: number;
  /** A: INVITE request retransmit, initially T1, doubling (§17.1.1.2). */
  A: number;
  /** B: INVITE client transaction timeout, 64*T1. */
  B: number;
  /** D: wait for response retransmits, at least 32 s over unreliable transports, 0 over reliable. */
  D: number;
  /** E: non-INVITE request retransmit, initially T1, doubling to T2 (§17.1.2.2). */
  E: number;
  /** F: non-INVITE client transaction timeout, 64*T1. */
  F: number;
  /** G: INVITE final response retransmit, initially T1, doubling to T2 (§17.2.1). */
  G: number;
  /** H: wait for ACK, 64*T1. */
  H: number;
  /** I: wait for ACK retransmits, T4 over unreliable, 0 over reliable. */
  I: number;
  /** J: wait for non-INVITE request retransmits, 64*T1 over unreliable, 0 over reliable. */
  J: number;
  /** K: wait for response retransmits, T4 over unreliable, 0 over reliable. */
  K: number;
  /** L: accepted INVITE server transaction lifetime, 64*T1 (RFC 6026 §8.7). */
  L: number;
  /** M: accepted INVITE client transaction lifetime, 64*T1 (RFC 6026 §8.4). */
  M: number;
}

const derived = new WeakMap<TimerSettings, [unreliable: TransactionTimers, reliable: TransactionTimers]>();

/** The derived timers for a settings object, computed once per settings object (transactions share them). */
export function timersFor(s: TimerSettings, reliable: boolean): TransactionTimers {
  let pair = derived.get(s);
  if (!pair) {
    pair = [deriveTimers(s, false), deriveTimers(s, true)];
    derived.set(s, pair);
  }
  return pair[reliable ? 1 : 0];
}

export function deriveTimers(s: TimerSettings, reliable: boolean): TransactionTimers {
  const t64 = 64 * s.T1;
  return {
    T1: s.T1,
    T2: s.T2,
    A: s.T1,
    B: t64,
    D: reliable ? 0 : Math.max(32000, t64),
    E: s.T1,
    F: t64,
    G: s.T1,
    H: t64,
    I: reliable ? 0 : s.T4,
    J: reliable ? 0 : t64,
    K: reliable ? 0 : s.T4,
    L: t64,
    M: t64,
  };
}
