import type { ReasonCode } from '../events/index.js';
import type { CallRow } from '../store/index.js';
import type { CallLifecycle } from './lifecycle.js';
import type { CallBilling } from './live-call.js';

/**
 * The PSTN leg a Dial verb places: a CDR of its own (`parent_call_id` = the call that dialled, direction
 * `outbound`), rated and settled by billing like any outbound call, so forwarding an inbound call to the PSTN
 * is never carried at the inbound rate. A transferred party's new leg is one too (calls/transfer/: `internal` to an
 * extension, `outbound` to a number), rated by its own direction.
 */
export class ChildLeg {
  constructor(
    readonly life: CallLifecycle,
    private readonly billing: CallBilling | undefined,
  ) {}

  get id(): string {
    return this.life.row.id;
  }

  /** The dialled party answered: credit control starts. False when the leg cannot be rated (then hang it up). */
  async answered(): Promise<boolean> {
    if (!(await this.life.answered())) return false;
    const row = this.life.row;
    try {
      await this.billing?.callAnswered({
        callId: row.id,
        accountId: row.account_id,
        direction: row.direction,
        to: row.to_number,
        answeredAt: new Date(row.answered_at!),
      });
      return true;
    } catch {
      return false;
    }
  }

  /** Settles (when it was answered) and closes the leg's CDR once, as of `endedAt` (epoch ms) when given. */
  async end(reason: ReasonCode, endedAt?: number): Promise<CallRow> {
    const at = new Date(endedAt === undefined ? Date.now() : Math.min(endedAt, Date.now()));
    const settled =
      this.life.isAnswered && this.billing
        ? await this.billing.callEnded(this.id, at).catch(() => undefined)
        : undefined;
    return this.life.end(reason, { at, costCents: settled?.costCents });
  }
}
