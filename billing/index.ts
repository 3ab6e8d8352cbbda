export { CURRENCY, parseMoney, formatMoney, MoneyFormatError } from './money.js';
export {
  post,
  postInTransaction,
  InsufficientFundsError,
  LedgerConflictError,
  type LedgerDirection,
  type LedgerKind,
  type PostInput,
  type PostResult,
} from './ledger.js';
export { BillingCodes, type BillingCode, type BillingEventCode, type BillingEmit, type CutReason } from './codes.js';
export {
  RateBook,
  RateCard,
  RateNotFoundError,
  billableSeconds,
  cdrSeconds,
  secondsUp,
  talkCents,
  ttsCents,
  destinationDigits,
  DEFAULT_INCREMENT,
  type CallDirection,
  type BillingIncrement,
  type RateCallInput,
  type RateBookOptions,
} from './rating.js';
export { settleCall, talkKey, ttsKey, type CallCharge, type CallSettlementResult } from './settlement.js';
export { CreditMonitor, type CreditMonitorOptions, type CallAnswered, type CallSettlement } from './credit-monitor.js';
export {
  EnforcementWatchdog,
  StoreHeartbeatWatchdog,
  type EnforcementWatchdogOptions,
  type StoreHeartbeatWatchdogOptions,
} from './watchdog.js';
export { ReconcileSweep, reconcileCall, type ReconcileOptions, type ReconciledCall } from './reconcile.js';
export { NodeWatch, HEARTBEAT_MS, type NodeWatchOptions } from './node-watch.js';
export { checkDestination, type DestinationVerdict } from './destinations.js';
export {
  AdmissionRefusedError,
  StoreAdmission,
  type Admission,
  type AdmissionCode,
  type AdmissionRequest,
} from './admission.js';
export {
  OverloadControl,
  DEFAULT_OVERLOAD_SETTINGS,
  loadSignalsOf,
  type LoadSignals,
  type OverloadSettings,
  type OverloadState,
  type OverloadVerdict,
  type NewCallGate,
  type PublishedGate,
} from './overload.js';
export {
  applyTopupPayment,
  applyTopupReversal,
  TopupRefusedError,
  TOPUP_KEY_PREFIX,
  type TopupPayment,
  type TopupReversal,
  type TopupOutcome,
} from './topups.js';
export {
  reconcileTopups,
  type TopupReconciliation,
  type ProviderTotals,
  type TopupMismatch,
} from './topup-reconcile.js';
export {
  secondsUntilCut,
  warnCalls,
  MAX_WARNING_LEAD_SECONDS,
  type CreditWarn,
  type CreditWarning,
} from './warning.js';
