import type { CallRow } from '../../store/index.js';
import type { DialOptions, DialResult, DialTarget } from '../../verbs/index.js';
import type { BridgedCall } from '../bridged-call.js';
import type { CallServices } from '../call-services.js';
import type { ChildLeg } from '../child-leg.js';
import type { LiveCall } from '../live-call.js';
import type { TransferWatch } from '../transfer/transfer-bridge.js';

/** The call services with the engine's hold on calls: what every call flow is handed; built once by the engine. */
export interface FlowServices extends CallServices {
  /** Holds a call the platform answers or places (an IVR leg). */
  trackIvr(row: CallRow): LiveCall;
  /** Holds a bridge of two SIP legs; `unbilled` keeps it off the credit monitor (calls/prepaid/balance-call.ts). */
  trackBridge(row: CallRow, opts?: { unbilled?: boolean }): BridgedCall;
  /**
   * Opens the CDR and billing of a PSTN leg of `parent` (a Dial, a forward to a number: calls/child-leg.ts) and
   * holds it. Run inside admission, so the leg counts against the account's caps from the moment it exists.
   */
  openChildLeg(parent: LiveCall | BridgedCall, from: string, to: string): Promise<ChildLeg>;
  /** Runs a call's Dial verb (calls/flows/dial-verb.ts, a conference: calls/conference/). */
  dial(call: LiveCall, target: DialTarget, options: DialOptions): Promise<DialResult>;
  /** REFER from phones on bridges (calls/transfer/); absent: a dialled leg's REFER is answered 501. */
  readonly transfers?: TransferWatch;
}
