import {
  closeCallIfLive,
  findCallAnyAccount,
  findCallCredit,
  inTransaction,
  liveCallIds,
  noteCallsWritten,
  nowIso,
  patchCallRow,
  type Db,
} from '../store/index.js';
import { roomLogger, type Logger } from '../config/index.js';
import { BillingCodes, reasonLabel, type BillingEmit } from './codes.js';
import { LedgerConflictError } from './ledger.js';
import { formatMoney } from './money.js';
import { secondsUp, talkCents, DEFAULT_INCREMENT, type BillingIncrement } from './rating.js';
import { settleCallInTransaction, emitDebits } from './settlement.js';
import { systemClock, type Clock, type Periodic } from '../kit/index.js';

/**
 * The reconcile sweep (platform-api.md, States: "Call record shown live but the switch has already ended it";
 * reason code END.0504). A call the store shows live (initiated, ringing, answered) that the switch no longer holds
 * is closed: `ended_at` is the detection time and the reason END.0504.
 *
 * What is billed: talk time only if the dialled leg reported answer (`answered_at` set), and only up to the last
 * heartbeat a live credit monitor wrote for it (`call_credit.heartbeat_at`, at most a few seconds old when the
 * process died), at the rate fixed at answer, plus speech already priced. Time after that heartbeat nobody can vouch
 * for is not billed; a call with no credit row (no monitor ever saw it answered) is closed at no charge.
 *
 * Exactly once: the row is closed by a conditional update (only while still live) in the same transaction as the
 * settlement (keys call:<id>:talk / call:<id>:tts), and only the sweep whose update won emits CALL.0300/CALL.0400.
 * A second sweep, or a sweep racing another node's, finds nothing live and changes nothing.
 */
export const LIVE_STATUSES = ['initiated', 'ringing', 'answered'] as const;

export interface ReconcileOptions {
  db: Db;
  /** Whether the switch still holds the call (its SIP dialog / media session). */
  isLive: (callId: string) => boolean | Promise<boolean>;
  emit: BillingEmit;
  /** Only rows of this node; null on a one-box deployment (every live row is this process's). */
  nodeId: string | null;
  increment?: BillingIncrement;
  clock?: Pick<Clock, 'now' | 'every'>;
  /** Period of the sweep after the start-up pass. */
  intervalMs?: number;
  /** A periodic sweep skips rows younger than this (a call being set up may be in the store before the switch). */
  minAgeMs?: number;
  /** The local credit monitor, told to stop tracking a call this sweep settled. */
  monitor?: { release(callId: string): void };
  logger?: Logger;
}

export interface ReconciledCall {
  callId: string;
  accountId: string;
  status: 'completed' | 'failed';
  talkSeconds: number;
  costCents: number;
}

const ms = (iso: string | null | undefined): number | undefined => (iso ? Date.parse(iso) : undefined);

/**
 * Closes one call found live in the store but gone from the switch (also for the hangup path, which detects the
 * same mismatch). Returns undefined when the row was no longer live (someone else closed it).
 */
export async function reconcileCall(
  db: Db,
  callId: string,
  detectedAtMs: number,
  opts: { emit?: BillingEmit; increment?: BillingIncrement } = {},
): Promise<ReconciledCall | undefined> {
  const inc = opts.increment ?? DEFAULT_INCREMENT;
  for (let attempt = 0; ; attempt++) {
    try {
      const done = await inTransaction(db, async (trx) => {
        const call = await findCallAnyAccount(trx, callId);
        if (!call || !(LIVE_STATUSES as readonly string[]).includes(call.status)) return undefined;
        const answered = !!call.answered_at;
        const status = answered ? 'completed' : 'failed';
        const endedAt = nowIso(new Date(detectedAtMs));
        // Closing first, conditionally, makes this transaction the only one that bills and reports the call.
        const won = await closeCallIfLive(trx, callId, {
          status,
          reason_code: BillingCodes.reconciled,
          reason_label: reasonLabel(BillingCodes.reconciled),
          ended_at: endedAt,
        });
        if (!won) return undefined;
        const credit = answered ? await findCallCredit(trx, callId) : undefined;
        const started = ms(call.started_at) ?? ms(call.created_at) ?? detectedAtMs;
        // Both lengths rounded up from instants no earlier than the start, so talk time never exceeds the duration.
        let talkSeconds = 0;
        let talk = 0;
        let tts = 0;
        if (credit) {
          const from = Math.max(started, ms(call.answered_at) ?? ms(credit.answered_at)!);
          const until = Math.min(ms(credit.heartbeat_at)!, detectedAtMs);
          talkSeconds = secondsUp(from, until);
          talk = talkCents(credit.rate_cents_per_minute, talkSeconds, inc);
          tts = credit.tts_cents;
        }
        const s = await settleCallInTransaction(trx, {
          accountId: call.account_id,
          callId,
          talkCents: talk,
          ttsCents: tts,
        });
        const durationSeconds = secondsUp(started, detectedAtMs);
        await patchCallRow(trx, callId, {
          talk_seconds: answered ? talkSeconds : null,
          cost_cents: s.costCents,
          duration_seconds: durationSeconds,
        });
        return { call, s, status, talkSeconds, durationSeconds, endedAt } as const;
      });
      if (!done) return undefined;
      const { call, s, status, talkSeconds, durationSeconds, endedAt } = done;
      noteCallsWritten(call.account_id); // cached lists and totals of the account are stale now
      emitDebits(opts.emit, call.account_id, callId, s);
      try {
        opts.emit?.(call.account_id, status === 'completed' ? BillingCodes.callCompleted : BillingCodes.callFailed, {
          callId,
          sid: call.sid,
          reasonCode: BillingCodes.reconciled,
          duration: durationSeconds,
          talkSeconds: status === 'completed' ? talkSeconds : null,
          cost: formatMoney(s.costCents),
          endedAt,
        });
      } catch {
        // the call is closed and billed; a listener's failure changes nothing
      }
      return { callId, accountId: call.account_id, status, talkSeconds, costCents: s.costCents };
    } catch (e) {
      if (e instanceof LedgerConflictError && attempt < 5) continue;
      throw e;
    }
  }
}

export class ReconcileSweep {
  readonly #o: Required<Omit<ReconcileOptions, 'logger' | 'monitor'>> & Pick<ReconcileOptions, 'monitor'>;
  readonly #log: Logger;
  #timer: Periodic | undefined;
  #running: Promise<ReconciledCall[]> | undefined;
  #closed = false;

  constructor(opts: ReconcileOptions) {
    this.#o = {
      increment: DEFAULT_INCREMENT,
      clock: systemClock,
      intervalMs: 30_000,
      minAgeMs: 10_000,
      ...opts,
    };
    this.#log = opts.logger ?? roomLogger('billing');
  }

  /** The start-up pass (every live row of this node is an orphan: nothing can be live yet), then periodic. */
  async start(): Promise<ReconciledCall[]> {
    const first = await this.runOnce({ minAgeMs: 0 });
    if (!this.#closed && this.#timer === undefined) {
      this.#timer = this.#o.clock.every(
        this.#o.intervalMs,
        () => void this.runOnce().catch((e: unknown) => this.#log.error({ err: e }, 'reconcile sweep failed')),
        'reconcile-sweep',
      );
    }
    return first;
  }

  /** One sweep; overlapping calls share the one running. */
  runOnce(opts: { minAgeMs?: number } = {}): Promise<ReconciledCall[]> {
    this.#running ??= this.#sweep(opts.minAgeMs ?? this.#o.minAgeMs).finally(() => (this.#running = undefined));
    return this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
  }

  async #sweep(minAgeMs: number): Promise<ReconciledCall[]> {
    const now = this.#o.clock.now();
    const ids = await liveCallIds(this.#o.db, nowIso(new Date(now - minAgeMs)), this.#o.nodeId);
    const closed: ReconciledCall[] = [];
    for (const id of ids) {
      if (await this.#o.isLive(id)) continue;
      const r = await reconcileCall(this.#o.db, id, this.#o.clock.now(), {
        emit: this.#o.emit,
        increment: this.#o.increment,
      });
      if (r) {
        this.#o.monitor?.release(id);
        this.#log.info({ callId: id, status: r.status }, 'closed a call the switch no longer holds (END.0504)');
        closed.push(r);
      }
    }
    return closed;
  }
}
