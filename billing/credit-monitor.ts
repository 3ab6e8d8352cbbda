import type { Db } from '../store/index.js';
import {
  accountFunds,
  callCreditHeartbeats,
  findAccountSettings,
  heartbeatCallCredits,
  nowIso,
  NotFoundError,
  recordCallCredit,
  setCallCreditTts,
} from '../store/index.js';
import { roomLogger, type Logger } from '../config/index.js';
import { BillingCodes, type BillingEmit, type CutReason } from './codes.js';
import { secondsUp, talkCents, ttsCents, type CallDirection, type RateBook, type RateCard } from './rating.js';
import { formatMoney } from './money.js';
import { settleCall, settledCharges } from './settlement.js';
import { EnforcementWatchdog } from './watchdog.js';
import { warnCalls, type CreditWarn, type CreditWarning } from './warning.js';
import { systemClock, type Clock, type Periodic } from '../kit/index.js';

/**
 * Live credit control (ARCHITECTURE.md, billing; platform-api.md, Events BILL.0310/BILL.0403, reason codes
 * END.0408 and END.0503).
 *
 * Design: consumption is tracked in memory and settled once at the end of each call (one ledger row per call and
 * kind, see settlement.ts), rather than debited per interval. From answer, every live call of an account draws on
 * one balance: each tick compares the account's balance (read from the store, refreshed every few seconds) with
 * what its live calls have committed so far. A call commits its first billing block on answer and then each
 * increment as it starts (time is billed in advance, in whole increments). When the committed total exceeds the
 * balance, the increment just started cannot be paid: every live call of the account is cut with BILL.0403, at
 * most one tick (250 ms) later. Settlement is capped at the balance, so the wallet ends at zero, never below.
 */

export interface CreditMonitorOptions {
  db: Db;
  rates: RateBook;
  /** Ends a call on the switch; the calls room then reports it with `callEnded`. Must not throw. */
  cut: (callId: string, reasonCode: CutReason) => void;
  emit: BillingEmit;
  /** Told once per call, about the account's lead time before the cut (billing/warning.ts); must not throw. */
  warn?: CreditWarn;
  /** This process, written on credit rows so a watchdog elsewhere knows whose heartbeat guards a call. */
  nodeId?: string | null;
  clock?: Pick<Clock, 'now' | 'every'>;
  tickMs?: number;
  /** BILL.0310 when the account's live calls have less than this many seconds left. */
  lowBalanceSeconds?: number;
  /** How often the balance is re-read from the store (top-ups, charges from other processes). */
  balanceRefreshMs?: number;
  /** How often live calls' heartbeats are written to `call_credit` (what the reconcile sweep bills up to). */
  heartbeatPersistMs?: number;
  /** Other nodes' credit rows with a heartbeat older than this are not counted against the balance. */
  peerStaleMs?: number;
  /** A cut call still not reported ended after this long is cut again (a lost BYE, a cut that failed). */
  recutMs?: number;
  /** The watchdog cuts guarded calls with END.0503 when no tick has completed for this long. */
  watchdogStallMs?: number;
  watchdogCheckMs?: number;
  logger?: Logger;
}

export interface CallAnswered {
  callId: string;
  accountId: string;
  direction: CallDirection;
  to: string;
  answeredAt: Date | number | string;
}

export interface CallSettlement {
  /** Ledger amounts for this call (talk + tts); what the calls room writes as the CDR's cost. */
  costCents: number;
  talkCents: number;
  ttsCents: number;
  /** Connected seconds (a started second counts). */
  talkSeconds: number;
  ttsSeconds: number;
}

interface MonitoredCall {
  callId: string;
  accountId: string;
  answeredAtMs: number;
  ratePerMinute: number;
  card: RateCard;
  maxCallSeconds: number;
  ttsByTier: Map<string, number>;
  /** Its call_credit row was written (so a missing row means someone else settled the call). */
  recorded: boolean;
  /** The "one minute left" notice (billing/warning.ts): the account's lead time and language, and whether given. */
  warnLeadSeconds: number;
  language: string;
  warned: boolean;
  endedAtMs?: number;
  cutReason?: CutReason;
  cutAtMs?: number;
  settlement?: Promise<CallSettlement>;
}

interface AccountWallet {
  accountId: string;
  balanceCents: number;
  calls: Map<string, MonitoredCall>;
  /** Settlements in flight and a counter bumped when one lands: a balance read overlapping either is stale. */
  settling: number;
  epoch: number;
  lowWarned: boolean;
  /** What the account's live calls on other nodes had committed at the last read (0 on one box). */
  othersCents: number;
  /** When the balance was last read from the store (ms), if it was. */
  readAtMs?: number;
}

const toMs = (t: Date | number | string): number =>
  typeof t === 'number' ? t : typeof t === 'string' ? Date.parse(t) : t.getTime();

export class CreditMonitor {
  readonly #o: Required<Omit<CreditMonitorOptions, 'nodeId' | 'logger' | 'warn'>> & {
    nodeId: string | null;
    warn?: CreditWarn;
  };
  readonly #log: Logger;
  readonly #wallets = new Map<string, AccountWallet>();
  readonly #calls = new Map<string, MonitoredCall>();
  /** Settlements of calls no longer tracked, so a repeated callEnded returns the same answer. */
  readonly #settled = new Map<string, Promise<CallSettlement>>();
  readonly #background = new Set<Promise<unknown>>();
  readonly #answering = new Map<string, Promise<void>>();
  readonly #tickTimer: Periodic;
  readonly #watchdog: EnforcementWatchdog;
  #lastTickAt: number;
  #lastRefreshAt: number;
  #lastPersistAt: number;
  #closed = false;
  #persisting = false;

  constructor(opts: CreditMonitorOptions) {
    this.#o = {
      clock: systemClock,
      tickMs: 250,
      lowBalanceSeconds: 60,
      balanceRefreshMs: 2000,
      heartbeatPersistMs: 5000,
      recutMs: 5000,
      watchdogStallMs: 3000,
      watchdogCheckMs: 500,
      ...opts,
      peerStaleMs: opts.peerStaleMs ?? 3 * (opts.heartbeatPersistMs ?? 5000),
      nodeId: opts.nodeId ?? null,
    };
    this.#log = opts.logger ?? roomLogger('billing');
    const now = this.#o.clock.now();
    this.#lastTickAt = this.#lastRefreshAt = this.#lastPersistAt = now;
    this.#tickTimer = this.#o.clock.every(this.#o.tickMs, () => this.tick(), 'credit-tick');
    this.#watchdog = new EnforcementWatchdog({
      clock: this.#o.clock,
      heartbeat: () => this.#lastTickAt,
      guarded: () => [...this.#calls.values()].filter((c) => c.endedAtMs === undefined).map((c) => c.callId),
      cut: (callId) => this.#cut(this.#calls.get(callId), BillingCodes.watchdogCut),
      stallMs: this.#o.watchdogStallMs,
      checkMs: this.#o.watchdogCheckMs,
    });
  }

  /** From answer the call draws on its account's balance. Throws RateNotFoundError for an unpriced destination. */
  callAnswered(a: CallAnswered): Promise<void> {
    if (this.#closed || this.#calls.has(a.callId)) return Promise.resolve();
    const pending = this.#answering.get(a.callId);
    if (pending) return pending;
    // Until the answer is recorded, an end or speech for the call waits for it (see callEnded, ttsUsed).
    const p = this.#answer(a).finally(() => this.#answering.delete(a.callId));
    this.#answering.set(a.callId, p);
    return p;
  }

  async #answer(a: CallAnswered): Promise<void> {
    const card = await this.#o.rates.card();
    const ratePerMinute = card.perMinute(a.direction, a.to);
    const before = this.#walletOf(a.accountId);
    const epoch = before.epoch;
    const readAt = this.#o.clock.now();
    // The account's balance is read once per wallet, not once per call: while the wallet holds live calls the
    // refresh keeps its balance as fresh as those calls use it, and a new call of the account draws on the same.
    const settings = this.#heldBalance(before, readAt) ? await findAccountSettings(this.#o.db, a.accountId) : undefined;
    // No settings cached, or the wallet was dropped meanwhile (its balance with it): the store is read.
    const acct =
      settings && this.#wallets.get(a.accountId) === before
        ? settings
        : await accountFunds(this.#o.db, a.accountId, this.#othersAsked());
    if (!acct) throw new NotFoundError('account', 'ACCOUNT_NOT_FOUND');
    if (this.#closed || this.#calls.has(a.callId)) return;
    // The wallet may have been dropped and re-made while we read; a read overlapping a settlement is stale.
    const wallet = this.#walletOf(a.accountId);
    if ('others_cents' in acct && (wallet !== before || (wallet.epoch === epoch && wallet.settling === 0))) {
      wallet.balanceCents = acct.balance_cents - acct.others_cents;
      wallet.othersCents = acct.others_cents;
      wallet.readAtMs = readAt;
    }
    const call: MonitoredCall = {
      callId: a.callId,
      accountId: a.accountId,
      answeredAtMs: toMs(a.answeredAt),
      ratePerMinute,
      card,
      maxCallSeconds: acct.max_call_seconds,
      ttsByTier: new Map(),
      recorded: false,
      warnLeadSeconds: acct.credit_warning_seconds,
      language: acct.language,
      warned: false,
    };
    wallet.calls.set(call.callId, call);
    this.#calls.set(call.callId, call);
    try {
      await recordCallCredit(this.#o.db, {
        call_id: call.callId,
        account_id: call.accountId,
        node_id: this.#o.nodeId,
        rate_cents_per_minute: ratePerMinute,
        answered_at: nowIso(new Date(call.answeredAtMs)),
        heartbeat_at: nowIso(new Date(this.#o.clock.now())),
      });
      call.recorded = true;
    } catch (e) {
      // The call is still guarded in memory; only the crash-recovery record is missing.
      this.#log.error({ err: e, callId: call.callId }, 'could not record live credit row');
    }
  }

  /** Seconds of speech synthesised on a live call, priced at its tier's rate fixed at answer. */
  ttsUsed(callId: string, seconds: number, tier = ''): void {
    const pending = this.#answering.get(callId);
    if (pending) {
      void pending.then(
        () => this.ttsUsed(callId, seconds, tier),
        () => undefined,
      );
      return;
    }
    const call = this.#calls.get(callId);
    if (!call || call.endedAtMs !== undefined) {
      this.#log.warn({ callId }, 'speech reported for a call the monitor does not hold; not billed');
      return;
    }
    call.ttsByTier.set(tier, (call.ttsByTier.get(tier) ?? 0) + Math.max(0, seconds));
    this.#track(setCallCreditTts(this.#o.db, callId, this.#ttsCentsOf(call), this.#ttsSecondsOf(call)));
  }

  /**
   * The call ended: settles it exactly once (a repeated or concurrent call returns the same result) and returns
   * the CDR figures. The calls room writes them on the call row; the ledger is written here.
   */
  callEnded(callId: string, endedAt: Date | number | string): Promise<CallSettlement> {
    const pending = this.#answering.get(callId);
    if (pending) return pending.catch(() => undefined).then(() => this.callEnded(callId, endedAt));
    const call = this.#calls.get(callId);
    if (!call) return this.#settled.get(callId) ?? this.#fromLedger(callId);
    if (call.settlement) return call.settlement;
    // A retry after a failed settlement keeps the first end time.
    call.endedAtMs ??= Math.max(call.answeredAtMs, toMs(endedAt));
    const wallet = this.#walletOf(call.accountId);
    const talkSeconds = secondsUp(call.answeredAtMs, call.endedAtMs);
    const rated = {
      talk: talkCents(call.ratePerMinute, talkSeconds, call.card.increment),
      tts: this.#ttsCentsOf(call),
    };
    wallet.settling++;
    const p = settleCall(
      this.#o.db,
      { accountId: call.accountId, callId, talkCents: rated.talk, ttsCents: rated.tts },
      this.#o.emit,
    )
      .then((s) => {
        if (s.balanceAfterCents !== undefined) wallet.balanceCents = s.balanceAfterCents - wallet.othersCents;
        wallet.epoch++;
        wallet.calls.delete(callId);
        this.#calls.delete(callId);
        this.#settled.set(callId, p);
        if (this.#settled.size > 10000) this.#settled.delete(this.#settled.keys().next().value as string);
        if (wallet.calls.size === 0 && wallet.settling === 1) this.#wallets.delete(call.accountId);
        return {
          costCents: s.costCents,
          talkCents: s.talkCents,
          ttsCents: s.ttsCents,
          talkSeconds,
          ttsSeconds: this.#ttsSecondsOf(call),
        };
      })
      .catch((e: unknown) => {
        // Not settled: the call stays counted against the balance and a later callEnded tries again.
        call.settlement = undefined;
        throw e;
      })
      .finally(() => wallet.settling--);
    call.settlement = p;
    this.#track(p.catch(() => undefined));
    return p;
  }

  /** One pass over every account with live calls: exhaustion, low balance, maximum duration. */
  tick(): void {
    if (this.#closed) return;
    const now = this.#o.clock.now();
    for (const wallet of this.#wallets.values()) {
      let committed = 0;
      let centsPerSecond = 0;
      const live: MonitoredCall[] = [];
      for (const call of wallet.calls.values()) {
        committed += this.#committedCents(call, now);
        if (call.cutReason && call.endedAtMs === undefined && now - call.cutAtMs! >= this.#o.recutMs) {
          call.cutAtMs = now;
          this.#log.warn({ callId: call.callId, reason: call.cutReason }, 'cut call still live; cutting again');
          this.#invokeCut(call.callId, call.cutReason);
        }
        if (call.endedAtMs === undefined && !call.cutReason) {
          live.push(call);
          centsPerSecond += call.ratePerMinute / 60;
        }
      }
      if (committed > wallet.balanceCents) {
        // The increment just started cannot be paid: every live call of the account stops (spec BILL.0403).
        for (const call of live) this.#cut(call, BillingCodes.walletExhausted);
        continue;
      }
      const secondsLeft = centsPerSecond > 0 ? (wallet.balanceCents - committed) / centsPerSecond : Infinity;
      if (this.#o.warn && live.length > 0) {
        warnCalls(
          {
            accountId: wallet.accountId,
            calls: live,
            estimateSeconds: secondsLeft,
            balanceCents: wallet.balanceCents,
            nowMs: now,
            committedAt: (t) => {
              let sum = 0;
              for (const c of wallet.calls.values()) sum += this.#committedCents(c, t);
              return sum;
            },
          },
          (id, w) => this.#warn(id, w),
        );
      }
      if (secondsLeft < this.#o.lowBalanceSeconds && live.length > 0) {
        if (!wallet.lowWarned) {
          wallet.lowWarned = true;
          this.#emit(wallet.accountId, BillingCodes.walletLow, {
            balance: formatMoney(Math.max(0, wallet.balanceCents - committed)),
            secondsLeft: Math.floor(secondsLeft),
            liveCalls: live.length,
          });
        }
      } else if (secondsLeft >= this.#o.lowBalanceSeconds) {
        wallet.lowWarned = false; // topped up: warn again next time
      }
      for (const call of live) {
        if (now - call.answeredAtMs >= call.maxCallSeconds * 1000) this.#cut(call, BillingCodes.maxDuration);
      }
    }
    if (now - this.#lastRefreshAt >= this.#o.balanceRefreshMs) {
      this.#lastRefreshAt = now;
      for (const w of this.#wallets.values()) this.#track(this.#refreshBalance(w));
    }
    // One write at a time: on a connection pool two in flight could land out of order and move it backwards.
    // While one is in flight the next tick tries again.
    if (now - this.#lastPersistAt >= this.#o.heartbeatPersistMs) {
      if (!this.#persisting) {
        this.#lastPersistAt = now;
        this.#persisting = true;
        this.#track(this.#persistHeartbeats(now).finally(() => (this.#persisting = false)));
      }
    }
    this.#lastTickAt = now;
  }

  /**
   * Stops tracking a call settled elsewhere (the reconcile sweep closed it, or another process settled it)
   * without settling it here: it no longer draws on its account's balance.
   */
  release(callId: string): void {
    const call = this.#calls.get(callId);
    if (!call || call.settlement) return;
    this.#calls.delete(callId);
    const wallet = this.#wallets.get(call.accountId);
    wallet?.calls.delete(callId);
    if (wallet && wallet.calls.size === 0 && wallet.settling === 0) this.#wallets.delete(call.accountId);
    this.#log.info({ callId }, 'released a call settled elsewhere');
  }

  /** Calls this monitor guards (answered, not yet settled). */
  liveCallIds(): string[] {
    return [...this.#calls.keys()];
  }

  /**
   * What an account can still spend now: its balance less what its live calls have committed (their current
   * increments and speech). Admission can refuse a new call when this is not positive; undefined when the account
   * has no live call here (then the stored balance is the answer).
   */
  spendableOf(accountId: string): number | undefined {
    const w = this.#wallets.get(accountId);
    if (!w) return undefined;
    const now = this.#o.clock.now();
    let committed = 0;
    for (const call of w.calls.values()) committed += this.#committedCents(call, now);
    return Math.max(0, w.balanceCents - committed);
  }

  /** The balance the monitor works from for an account with live calls (for tests and the portal). */
  balanceOf(accountId: string): number | undefined {
    return this.#wallets.get(accountId)?.balanceCents;
  }

  /** Waits for settlements and store writes in flight (heartbeats, speech, balance reads). */
  async drain(): Promise<void> {
    while (this.#background.size) await Promise.allSettled([...this.#background]);
  }

  /** Stops the timers and waits for settlements and store writes in flight. Safe to call twice. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#tickTimer.cancel();
      this.#watchdog.close();
    }
    await this.drain();
  }

  /**
   * Whether a new call of the account can take the wallet's balance instead of reading it: the wallet holds live calls
   * (so the refresh keeps reading it) and its balance was read within two refresh periods.
   */
  #heldBalance(w: AccountWallet, now: number): boolean {
    return w.calls.size > 0 && w.readAtMs !== undefined && now - w.readAtMs < 2 * this.#o.balanceRefreshMs;
  }

  #walletOf(accountId: string): AccountWallet {
    let w = this.#wallets.get(accountId);
    if (!w) {
      w = { accountId, balanceCents: 0, calls: new Map(), settling: 0, epoch: 0, lowWarned: false, othersCents: 0 };
      this.#wallets.set(accountId, w);
    }
    return w;
  }

  #committedCents(call: MonitoredCall, now: number): number {
    const end = call.endedAtMs ?? now;
    const talkSeconds = secondsUp(call.answeredAtMs, end);
    return talkCents(call.ratePerMinute, talkSeconds, call.card.increment) + this.#ttsCentsOf(call);
  }

  #ttsCentsOf(call: MonitoredCall): number {
    let cents = 0;
    for (const [tier, secs] of call.ttsByTier) cents += ttsCents(call.card.ttsPerSecond(tier), secs);
    return cents;
  }

  #ttsSecondsOf(call: MonitoredCall): number {
    let secs = 0;
    for (const s of call.ttsByTier.values()) secs += s;
    return Math.ceil(secs);
  }

  #cut(call: MonitoredCall | undefined, reason: CutReason): void {
    if (!call || call.cutReason || call.endedAtMs !== undefined) return;
    call.cutReason = reason;
    call.cutAtMs = this.#o.clock.now();
    this.#log.info({ callId: call.callId, reason }, 'cutting call');
    if (reason === BillingCodes.walletExhausted) this.#emit(call.accountId, reason, { callId: call.callId });
    this.#invokeCut(call.callId, reason);
  }

  #warn(callId: string, w: CreditWarning): void {
    this.#emit(w.accountId, BillingCodes.creditWarning, {
      callId,
      secondsLeft: w.secondsLeft,
      leadSeconds: w.leadSeconds,
      language: w.language,
    });
    try {
      this.#o.warn?.(callId, w);
    } catch (e) {
      this.#log.error({ err: e, callId }, 'warn callback threw');
    }
  }

  #invokeCut(callId: string, reason: CutReason): void {
    try {
      this.#o.cut(callId, reason);
    } catch (e) {
      this.#log.error({ err: e, callId }, 'cut callback threw');
    }
  }

  #emit(accountId: string, code: Parameters<BillingEmit>[1], data: Record<string, unknown>): void {
    try {
      this.#o.emit(accountId, code, data);
    } catch (e) {
      this.#log.error({ err: e, code }, 'emit threw');
    }
  }

  async #refreshBalance(w: AccountWallet): Promise<void> {
    if (w.settling) return;
    const epoch = w.epoch;
    const funds = await accountFunds(this.#o.db, w.accountId, this.#othersAsked());
    if (funds === undefined) return;
    const balance = funds.balance_cents;
    const others = funds.others_cents;
    // A settlement that started or landed during the read makes it stale; the next refresh will do.
    if (w.epoch === epoch && w.settling === 0) {
      w.balanceCents = balance - others;
      w.othersCents = others;
      w.readAtMs = this.#o.clock.now();
    }
  }

  /**
   * What the account's live calls on other nodes have committed, as their monitors last wrote it, is read with the
   * balance; this node may spend the balance less that (rows with a fresh heartbeat; a dead node's rows are left
   * to the reconcile sweep). On one box (nodeId null) there are no other nodes, and nothing to ask.
   */
  #othersAsked(): { nodeId: string; since: string } | undefined {
    if (this.#o.nodeId === null) return undefined;
    return { nodeId: this.#o.nodeId, since: nowIso(new Date(this.#o.clock.now() - this.#o.peerStaleMs)) };
  }

  async #persistHeartbeats(now: number): Promise<void> {
    const ids = [...this.#calls.values()].filter((c) => c.endedAtMs === undefined && c.recorded).map((c) => c.callId);
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      // One statement per chunk: the heartbeat and each call's committed cents (for monitors on other nodes).
      const n = await heartbeatCallCredits(
        this.#o.db,
        nowIso(new Date(now)),
        chunk.map((id) => ({ callId: id, committedCents: this.#committedCents(this.#calls.get(id)!, now) })),
      );
      if (n < chunk.length) {
        // A recorded credit row is gone only when the call was settled elsewhere (reconcile sweep): let it go.
        const still = new Set((await callCreditHeartbeats(this.#o.db, chunk)).map((r) => r.call_id));
        for (const id of chunk) if (!still.has(id)) this.release(id);
      }
    }
  }

  async #fromLedger(callId: string): Promise<CallSettlement> {
    const s = await settledCharges(this.#o.db, callId);
    return { ...s, costCents: s.talkCents + s.ttsCents, talkSeconds: 0, ttsSeconds: 0 };
  }

  #track(p: PromiseLike<unknown>): void {
    const q = Promise.resolve(p).catch((e: unknown) => this.#log.error({ err: e }, 'billing store write failed'));
    this.#background.add(q);
    void q.finally(() => this.#background.delete(q));
  }
}
