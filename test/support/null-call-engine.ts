import type { CallControlOutcome, CallEngine, MachineDetectionRequest, OriginateOptions } from '../../calls/index.js';
import type { InterpreterStart } from '../../verbs/index.js';
import { ReasonCodes } from '../../events/index.js';
import {
  LIVE_CALL_STATUSES,
  findCallAnyAccount,
  nowIso,
  updateCall,
  type CallRow,
  type Db,
} from '../../store/index.js';

/**
 * A unit-test fake, not a call engine: it dials nothing. Originated calls are remembered as live until hung up,
 * when they end as `failed` with END.0487 (canceled before answer) — they were never answered. The API contract
 * tests use it because they check the API, not dialling; the e2e tests use the real engine.
 */
export class NullCallEngine implements CallEngine {
  readonly originated: Array<{ call: CallRow; timeoutSeconds: number; machineDetection?: MachineDetectionRequest }> =
    [];
  /** REST control requests that reached the engine for a call it holds, in order. */
  readonly redirects: Array<{ call: CallRow; to: InterpreterStart; source: 'url' | 'twiml' }> = [];
  readonly digits: Array<{ call: CallRow; digits: string }> = [];
  readonly #live = new Set<string>();
  constructor(private readonly db: Db) {}

  async originate(call: CallRow, opts: OriginateOptions): Promise<void> {
    this.originated.push({ call, ...opts });
    this.#live.add(call.id);
  }

  async hangup(call: CallRow): Promise<CallRow> {
    // A call this fake never placed is one the switch does not hold: closed as END.0504, like the real engine
    // (which also settles it and reports it; this fake neither bills nor emits).
    const held = this.#live.delete(call.id);
    const now = nowIso();
    const answered = call.answered_at !== null || call.status === 'answered';
    const ended = await updateCall(
      this.db,
      call.id,
      {
        status: held || !answered ? 'failed' : 'completed',
        reason_code: held ? ReasonCodes.canceled : ReasonCodes.reconciled,
        reason_label: held ? 'Canceled before answer' : 'Reconciled from the switch',
        ended_at: now,
        duration_seconds: call.started_at ? Math.round((Date.parse(now) - Date.parse(call.started_at)) / 1000) : 0,
      },
      LIVE_CALL_STATUSES,
    );
    return ended ?? ((await findCallAnyAccount(this.db, call.id)) as CallRow);
  }

  async redirect(call: CallRow, to: InterpreterStart, source: 'url' | 'twiml'): Promise<CallControlOutcome> {
    if (!this.#live.has(call.id)) return 'not_held';
    this.redirects.push({ call, to, source });
    return 'ok';
  }

  async sendDigits(call: CallRow, digits: string): Promise<CallControlOutcome> {
    if (!this.#live.has(call.id)) return 'not_held';
    this.digits.push({ call, digits });
    return 'ok';
  }

  isLive(callId: string): boolean {
    return this.#live.has(callId);
  }
}
