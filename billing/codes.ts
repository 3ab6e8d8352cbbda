import { EventCodes, ReasonCodes, reasonLabel } from '../events/index.js';

/**
 * The event and reason codes this room emits, taken from the one catalogue (events/catalogue.ts; spec
 * platform-api.md, Events and Errors), gathered here so the billing files name them in the room's own words.
 */
export const BillingCodes = {
  /** wallet.debited: a usage charge was posted after a call or segment settled. */
  walletDebited: EventCodes.walletDebited,
  /** wallet.low: the live monitor warns the allowance is nearing its end on active calls. */
  walletLow: EventCodes.walletLow,
  /** call.credit_warning: the paying leg of a live call was told its allowance runs out soon. */
  creditWarning: EventCodes.creditWarning,
  /** wallet.exhausted, also the reason code of a call cut because the allowance ran out. */
  walletExhausted: EventCodes.walletExhausted,
  /** Reason code: cut at the account's absolute maximum-duration ceiling. */
  maxDuration: ReasonCodes.maxDuration,
  /** Reason code: leg cut because the billing monitor was unreachable (watchdog). */
  watchdogCut: ReasonCodes.watchdogCut,
  /** Reason code: the record was closed by the reconcile sweep. */
  reconciled: ReasonCodes.reconciled,
  /** call.completed / call.failed, emitted by the reconcile sweep for the calls it closes. */
  callCompleted: EventCodes.callCompleted,
  callFailed: EventCodes.callFailed,
} as const;

export type BillingCode = (typeof BillingCodes)[keyof typeof BillingCodes];

/** Reason codes the credit monitor passes to its `cut` callback. */
export type CutReason =
  typeof BillingCodes.walletExhausted | typeof BillingCodes.maxDuration | typeof BillingCodes.watchdogCut;

/** The events (not reason codes) this room emits. */
export type BillingEventCode =
  | typeof BillingCodes.walletDebited
  | typeof BillingCodes.walletLow
  | typeof BillingCodes.creditWarning
  | typeof BillingCodes.walletExhausted
  | typeof BillingCodes.callCompleted
  | typeof BillingCodes.callFailed;

/** How this room hands events to the events room: (account, code, code-specific data with `callId`). */
export type BillingEmit = (accountId: string, code: BillingEventCode, data: Record<string, unknown>) => void;

export { reasonLabel };
