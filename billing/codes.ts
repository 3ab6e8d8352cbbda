/**
 * The event and reason codes this room emits, in one place. They are the spec's catalogue (platform-api.md,
 * Events and Errors); once `events/catalogue.ts` lands these become re-exports of its constants.
 */
export const BillingCodes = {
  /** wallet.debited: a usage charge was posted after a call or segment settled. */
  walletDebited: 'BILL.0300',
  /** wallet.low: the live monitor warns the allowance is nearing its end on active calls. */
  walletLow: 'BILL.0310',
  /** wallet.exhausted, also the reason code of a call cut because the allowance ran out. */
  walletExhausted: 'BILL.0403',
  /** Reason code: cut at the account's absolute maximum-duration ceiling. */
  maxDuration: 'END.0408',
  /** Reason code: leg cut because the billing monitor was unreachable (watchdog). */
  watchdogCut: 'END.0503',
  /** Reason code: the record was closed by the reconcile sweep. */
  reconciled: 'END.0504',
  /** call.completed / call.failed, emitted by the reconcile sweep for the calls it closes. */
  callCompleted: 'CALL.0300',
  callFailed: 'CALL.0400',
} as const;

export type BillingCode = (typeof BillingCodes)[keyof typeof BillingCodes];

/** Reason codes the credit monitor passes to its `cut` callback. */
export type CutReason =
  typeof BillingCodes.walletExhausted | typeof BillingCodes.maxDuration | typeof BillingCodes.watchdogCut;

/** How this room hands events to the events room: (account, code, code-specific data). */
export type BillingEmit = (accountId: string, code: BillingCode, data: Record<string, unknown>) => void;
