import type { CallRow } from '../store/index.js';
import type { InterpreterStart } from '../verbs/index.js';
import type { QueueDirectory } from './queue/queue-registry.js';
import type { ConferenceControl } from './conference/conference-control.js';
import type { MachineDetectionRequest } from './machine-detection.js';

/**
 * What became of a REST control request on a live call: done; the switch does not hold the call (it ended, or
 * another process holds it); the call has no verbs to move or no IVR leg to send keys on (an internal call between
 * two phones, or keys while a Dial bridges it); or, for keys, the call is not answered yet.
 */
export type CallControlOutcome = 'ok' | 'not_held' | 'no_verbs' | 'bridged' | 'not_answered';

export interface OriginateOptions {
  readonly timeoutSeconds: number;
  readonly machineDetection?: MachineDetectionRequest;
}

/**
 * The one interface through which the API reaches the call engine. Declared here, below the API that uses it
 * (docs/architecture.md), and implemented by SwitchCallEngine. The API writes the call as `initiated` after
 * admission, then hands it over; the engine dials in the background and owns the call's life from there.
 */
export interface CallEngine {
  /**
   * Starts dialling an admitted call already stored as `initiated`. Resolves once dialling is under way. With
   * `machineDetection`, who answered is decided from the callee's audio (calls/machine-detection.ts).
   */
  originate(call: CallRow, opts: OriginateOptions): Promise<void>;
  /**
   * Ends a call the store shows live and resolves to the ended record. One the switch holds is ended there (BYE or
   * CANCEL); one it no longer holds is closed through the reconcile path (END.0504, settled and reported once, as
   * the periodic sweep would), never by a bare write of the row.
   */
  hangup(call: CallRow): Promise<CallRow>;
  /**
   * Moves a live call to new verbs now (POST /api/calls/{uuid}/update): `{ url }` is fetched as a call-control
   * request, `{ document }` runs as given; the running verb is interrupted (calls/call-redirect.ts). `source` is
   * what the call's CALL.0210 event says.
   */
  redirect(call: CallRow, to: InterpreterStart, source: 'url' | 'twiml'): Promise<CallControlOutcome>;
  /** Sends keys into the call towards its leg as RFC 4733 events; resolves once they were played out. */
  sendDigits(call: CallRow, digits: string): Promise<CallControlOutcome>;
  /** Whether this process holds the call live (the switch knows it). */
  isLive(callId: string): boolean;
  /** A voicemail message was deleted or changed outside a call: the end-user's phones get a message-summary NOTIFY. */
  mailboxChanged?(accountId: string, endUserId: string): void;
  /** The call queues of this process (api/routes/queues.ts); absent where the engine has none (API unit tests). */
  readonly queues?: QueueDirectory;
  /** Live conferences (api/routes/conferences.ts); absent where the engine has none (API unit tests). */
  readonly conferences?: ConferenceControl;
}
