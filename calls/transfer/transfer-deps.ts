import type { NewCall } from '../../store/index.js';
import type { TransferableBridge } from './transfer-bridge.js';
import type { CallBilling } from '../call-billing.js';
import type { ChildLeg } from '../child-leg.js';
import type { EndUserLocator } from '../flows/end-user.js';
import type { FlowDeps } from '../flows/flow-deps.js';

/** What a transfer needs of the engine: the flows' deps, the location service, billing and child-leg CDRs. */
export interface TransferDeps extends FlowDeps {
  locator: EndUserLocator;
  billing?: CallBilling;
  /**
   * Opens the CDR of the transferred party's new leg (`parent_call_id` = the call transferred) and has the engine
   * hold it, so a billing cut of the leg ends the call it belongs to (`parent.end`).
   */
  openLeg(parent: TransferableBridge, call: Omit<NewCall, 'parent_call_id' | 'parent_call_sid'>): Promise<ChildLeg>;
}
