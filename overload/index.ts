/**
 * Overload control: whether the box takes a new call now (docs/overload.md). The SIP edge and the API ask it
 * before any store work; the switch feeds it the event loop's and the store's signals.
 */
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
} from './overload-control.js';
