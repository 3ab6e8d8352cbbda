import { EventCodes, reasonLabel, type EmitInput, type EventPublisher, type ReasonCode } from '../events/index.js';
import { cdrSeconds } from '../billing/index.js';
import { updateCall, updateHeldCall, nowIso, LIVE_CALL_STATUSES, type CallRow, type Db } from '../store/index.js';
import type { Logger } from '../config/index.js';

/**
 * The call state machine as the customer sees it (spec: States and transitions):
 *
 *   initiated ──► ringing ──► answered ──► completed
 *       │            │
 *       └────────────┴──────────────────► failed
 *
 * Every move is a compare-and-set on the stored status, so two writers (a BYE and an API hangup, say) cannot
 * both end a call, and each move emits its event once. `ended` resolves when the call reaches a terminal state.
 */
export class CallLifecycle {
  #row: CallRow;
  #ended = false;
  #answeredAt: string | null;
  #answering: Promise<unknown> = Promise.resolve();
  #provisional: Promise<void> = Promise.resolve();
  #progressed = false;
  readonly #db: Db;
  readonly #events: EventPublisher;
  readonly #log: Logger;
  #resolveEnded!: (row: CallRow) => void;
  readonly ended: Promise<CallRow>;

  constructor(deps: { db: Db; events: EventPublisher; log: Logger }, row: CallRow) {
    this.#db = deps.db;
    this.#events = deps.events;
    this.#log = deps.log.child({ call: row.sid });
    this.#row = row;
    this.#answeredAt = row.answered_at;
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
  }

  get row(): CallRow {
    return this.#row;
  }

  get isEnded(): boolean {
    return this.#ended;
  }

  /** Known in memory the moment the answer is seen, before its store write lands (an end may race that write). */
  get isAnswered(): boolean {
    return this.#answeredAt !== null;
  }

  /** Emits CALL.0100 for a call written as `initiated` (the API or a flow wrote the row). */
  async initiated(): Promise<void> {
    if (!this.#row.started_at) {
      const row = await updateCall(this.#db, this.#row.id, { started_at: nowIso() });
      if (row) this.#row = row;
    }
    await this.#emit(EventCodes.callInitiated, {});
  }

  ringing(): Promise<void> {
    return this.#provisionally(async () => {
      if (this.#row.status !== 'initiated') return;
      const row = await updateHeldCall(this.#db, this.#row, { status: 'ringing' }, ['initiated']);
      if (!row) return;
      this.#row = row;
      await this.#emit(EventCodes.callRinging, {});
    });
  }

  /**
   * Early media before answer (a provisional response with SDP, RFC 3960): CALL.0183 once per leg, however many
   * such responses the far end sends; none once the leg is answered or ended. The status stays as it is.
   */
  progress(): Promise<void> {
    if (this.#progressed || this.#answeredAt !== null || this.#ended) return Promise.resolve();
    this.#progressed = true;
    return this.#provisionally(() => this.#emit(EventCodes.callProgress, {}));
  }

  /** Provisional events leave in the order the responses came, and before the answer's (see answered). */
  #provisionally(step: () => Promise<void>): Promise<void> {
    const next = this.#provisional.then(step);
    this.#provisional = next.catch(() => undefined);
    return next;
  }

  answered(at = new Date()): Promise<boolean> {
    if (this.#ended || this.#answeredAt !== null) return Promise.resolve(false);
    const answeredAt = nowIso(at);
    this.#answeredAt = answeredAt;
    const write = (async () => {
      await this.#provisional; // CALL.0180 / CALL.0183 of this leg go out before its CALL.0200
      const row = await updateHeldCall(this.#db, this.#row, { status: 'answered', answered_at: answeredAt }, [
        'initiated',
        'ringing',
      ]);
      if (!row) return false;
      this.#row = row;
      await this.#emit(EventCodes.callAnswered, {});
      return true;
    })();
    this.#answering = write.catch(() => false);
    return write;
  }

  /** Adds synthesised speech to the CDR, in whole seconds rounded up per utterance (spec: an integer). */
  async addTtsSeconds(seconds: number): Promise<void> {
    if (seconds <= 0) return;
    const row = await updateCall(this.#db, this.#row.id, { tts_seconds: this.#row.tts_seconds + Math.ceil(seconds) });
    if (row) this.#row = row;
  }

  /**
   * Ends the call: `completed` when it had connected, else `failed`; duration and talk time from the stored start
   * and answer and this end, by billing's one rounding (cdrSeconds: talk time never exceeds the duration, and is
   * the time billing rated from the same answer and end); `cost` as settled by billing. Only the first caller wins;
   * later calls return the ended row unchanged.
   */
  async end(reason: ReasonCode, opts: { at?: Date; costCents?: number; failed?: boolean } = {}): Promise<CallRow> {
    if (this.#ended) return this.#row;
    this.#ended = true;
    await this.#answering; // the answer's own write lands first, so the end's compare-and-set sees `answered`
    await this.#provisional; // and a leg's CALL.0180 / CALL.0183 go out before its terminal event
    const at = opts.at ?? new Date();
    const started = Date.parse(this.#row.started_at ?? this.#row.created_at);
    const answered = this.#answeredAt ? Date.parse(this.#answeredAt) : null;
    const status = answered !== null && !opts.failed ? 'completed' : 'failed';
    const { durationSeconds: duration, talkSeconds: talk } = cdrSeconds({
      startedMs: started,
      answeredMs: answered,
      endedMs: at.getTime(),
    });
    const row = await updateHeldCall(
      this.#db,
      this.#row,
      {
        status,
        answered_at: this.#answeredAt,
        reason_code: reason,
        reason_label: reasonLabel(reason),
        ended_at: nowIso(at),
        duration_seconds: duration,
        talk_seconds: talk,
        cost_cents: opts.costCents ?? this.#row.cost_cents,
      },
      LIVE_CALL_STATUSES,
    );
    if (row) {
      this.#row = row;
      await this.#emit(status === 'completed' ? EventCodes.callCompleted : EventCodes.callFailed, {});
    } else {
      this.#log.info('call was already ended by another writer');
    }
    this.#resolveEnded(this.#row);
    return this.#row;
  }

  /**
   * Attaches the metadata a verb document set (`<Response customPayload>`). The row in memory takes the stored
   * value at once: every later call-control request, action callback and event is built from it.
   */
  async setCustomPayload(payload: Readonly<Record<string, unknown>>): Promise<void> {
    const row = await updateCall(this.#db, this.#row.id, { custom_payload: JSON.stringify(payload) });
    if (row) this.#row = row;
  }

  /** Records answering machine detection's verdict on the call (the Call object's answered_by). */
  async setAnsweredBy(answeredBy: string, durationMs: number): Promise<void> {
    const row = await updateCall(this.#db, this.#row.id, { answered_by: answeredBy, machine_detection_ms: durationMs });
    if (row) this.#row = row;
  }

  /** Records the cost settled after the end (billing settles once the talk time is known). */
  async setCost(costCents: number): Promise<void> {
    const row = await updateCall(this.#db, this.#row.id, { cost_cents: costCents });
    if (row) this.#row = row;
  }

  /** `alsoTo`: a callback of the event to a URL of the customer's own beside the status route (EmitInput). */
  async emit(
    code: (typeof EventCodes)[keyof typeof EventCodes],
    data: Record<string, unknown> = {},
    alsoTo?: EmitInput['alsoTo'],
  ): Promise<void> {
    await this.#emit(code, data, alsoTo);
  }

  async #emit(
    code: (typeof EventCodes)[keyof typeof EventCodes],
    data: Record<string, unknown>,
    alsoTo?: EmitInput['alsoTo'],
  ): Promise<void> {
    try {
      // The row in memory is the result of this call's last write: the publisher need not read it again.
      const row = this.#row;
      await this.#events.emit({
        accountId: row.account_id,
        code,
        callId: row.id,
        callRow: row as unknown as Record<string, unknown>,
        data,
        ...(alsoTo ? { alsoTo } : {}),
      });
    } catch (e) {
      // An event that cannot be stored must not take the call down with it; it is logged with the call's sid.
      this.#log.error({ err: e, code }, 'event not recorded');
    }
  }
}
