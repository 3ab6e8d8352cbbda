import type { Logger } from '../config/index.js';
import type { EventPublisher, ReasonCode } from '../events/index.js';
import { insertCall, nowIso, type CallRow, type Db, type NewCall } from '../store/index.js';
import { CallLifecycle } from './lifecycle.js';
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

/** The call a child leg is part of: the call that dialled it, or the bridge a transfer brought it into. */
export interface ChildLegParent {
  readonly life: CallLifecycle;
  readonly isEnding: boolean;
  end(reason: ReasonCode): Promise<unknown>;
}

/**
 * The one registry of the child legs this process holds (Dial legs, a transferred party's new legs), by their own
 * call id, each with the call it is part of: a billing cut of a leg ends that call. A leg leaves when its CDR closes.
 */
export class ChildLegs {
  readonly #legs = new Map<string, { parent: ChildLegParent; life: CallLifecycle; parentHearsWarnings: boolean }>();

  constructor(private readonly deps: { db: Db; events: EventPublisher; log: Logger; billing?: CallBilling }) {}

  /**
   * Writes the leg's CDR (`parent_call_id` = the parent's) and holds it. `parentHearsWarnings`: the leg's credit
   * warnings are played to the parent (a Dial's caller).
   */
  async open(
    parent: ChildLegParent,
    call: Omit<NewCall, 'parent_call_id' | 'parent_call_sid'>,
    parentHearsWarnings: boolean,
  ): Promise<ChildLeg> {
    const { db, events, log, billing } = this.deps;
    const row = await insertCall(db, {
      ...call,
      parent_call_id: parent.life.row.id,
      parent_call_sid: parent.life.row.sid,
      started_at: nowIso(),
    });
    const life = new CallLifecycle({ db, events, log }, row);
    this.#legs.set(row.id, { parent, life, parentHearsWarnings });
    void life.ended.then(() => this.#legs.delete(row.id));
    return new ChildLeg(life, billing);
  }

  /** The call the leg `callId` is part of, or undefined when it is no child leg held here. */
  parentOf(callId: string): ChildLegParent | undefined {
    return this.#legs.get(callId)?.parent;
  }

  /** The call that hears the credit warnings of the leg `callId`, if any. */
  warnedParentOf(callId: string): ChildLegParent | undefined {
    const leg = this.#legs.get(callId);
    return leg?.parentHearsWarnings ? leg.parent : undefined;
  }

  rowOf(callId: string): CallRow | undefined {
    return this.#legs.get(callId)?.life.row;
  }

  has(callId: string): boolean {
    return this.#legs.has(callId);
  }
}
