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
