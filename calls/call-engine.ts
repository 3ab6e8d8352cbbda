import type { CallRow } from '../store/index.js';

/**
 * The one interface through which the API reaches the call engine. Declared here, below the API that uses it
 * (docs/architecture.md), and implemented by SwitchCallEngine. The API writes the call as `initiated` after
 * admission, then hands it over; the engine dials in the background and owns the call's life from there.
 */
export interface CallEngine {
  /** Starts dialling an admitted call already stored as `initiated`. Resolves once dialling is under way. */
  originate(call: CallRow, opts: { timeoutSeconds: number }): Promise<void>;
  /**
   * Ends a call the store shows live and resolves to the ended record. One the switch holds is ended there (BYE or
   * CANCEL); one it no longer holds is closed through the reconcile path (END.0504, settled and reported once, as
   * the periodic sweep would), never by a bare write of the row.
   */
  hangup(call: CallRow): Promise<CallRow>;
  /** Whether this process holds the call live (the switch knows it). */
  isLive(callId: string): boolean;
}
