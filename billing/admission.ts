import { setTimeout as sleep } from 'node:timers/promises';
import {
  admitInStore,
  balanceAndLiveCalls,
  getSettingCached,
  isPostgres,
  settleAdmission,
  storeNodeId,
  findAccountSettings,
  ratesOfKindCached,
  type AccountSettings,
  type Db,
} from '../store/index.js';
import { ReasonCodes } from '../events/index.js';
import { Fifo, systemClock, type Clock } from '../kit/index.js';

/**
 * Admission control for new calls (spec, Limits and Errors): account status, platform draining, balance,
 * concurrency cap, calls-per-second cap, checked in that order before a call is placed. A refused call is never
 * dialled nor billed.
 */
export type AdmissionCode =
  | typeof ReasonCodes.accountSuspended
  | typeof ReasonCodes.platformPaused
  | typeof ReasonCodes.insufficientBalance
  | typeof ReasonCodes.concurrencyCap
  | typeof ReasonCodes.cpsLimit;

/**
 * HTTP statuses of refusals. 402 and 429 are the spec's; suspension (403) and draining (503, with Retry-After)
 * are ours, because the spec leaves them unshown (docs/api.md).
 */
const STATUS: Record<AdmissionCode, number> = {
  [ReasonCodes.accountSuspended]: 403,
  [ReasonCodes.platformPaused]: 503,
  [ReasonCodes.insufficientBalance]: 402,
  [ReasonCodes.concurrencyCap]: 429,
  [ReasonCodes.cpsLimit]: 429,
};

export class AdmissionRefusedError extends Error {
  readonly status: number;
  constructor(
    readonly code: AdmissionCode,
    message: string,
    /** Seconds a client should wait before retrying (draining). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'AdmissionRefusedError';
    this.status = STATUS[code];
  }
}

export interface AdmissionRequest {
  accountId: string;
  /** Destination, to price the first minute; absent for on-net calls. */
  to?: string;
}

export interface Admission {
  /**
   * Checks the caps and, when the call is admitted, runs `place` (which writes the call as live), counted as this
   * account's placement under way until it settles, so concurrent requests cannot all see the same free slot.
   * Throws AdmissionRefusedError on refusal, without running `place`.
   */
  admit<T>(req: AdmissionRequest, place: () => Promise<T>): Promise<T>;
}

/** What admission knows before reading the store: the account's settings and this call's first-minute price. */
interface Prechecked {
  account: AccountSettings;
  minimum: number;
}

/** A call this process admitted whose placement (the write of its row) is under way or recently done. */
interface Placement {
  /** The tick at which `place` settled; Infinity while it runs. */
  doneAt: number;
  settled: Promise<void>;
}

/** One account's admissions under way in this process. */
interface AccountAdmissions {
  placements: Set<Placement>;
  /** Ticks of this account's reads of the store under way. */
  reads: Set<number>;
  /** The exact path, one admission at a time; and how many are queued on it or hold it. */
  turn: Promise<unknown> | undefined;
  queued: number;
}

/** The fast path's answer when the call may be near a limit: decide on the exact path. */
const NEAR_LIMIT = Symbol('near a limit');

/**
 * On PostgreSQL: how many times a refusal is asked again while admissions of the account are being placed (each
 * wait doubles from 1 ms up to 20 ms: about a second in all), and how long an admission may stay unsettled before
 * the store takes it for one whose node died while placing it.
 */
const STORE_RETRIES = 60;
const STORE_STALE_MS = 10_000;

/**
 * Admission against the store.
 *
 * On PostgreSQL, where several nodes share the store, the store decides (store/admissions.ts): one statement per
 * admission, under the account's advisory lock, counts the live calls of every node, the admissions whose call row
 * is still being written and those of the last second (the CPS window), checks the balance against the first blocks
 * of all of them, and records the admission. Once the call's row is written the admission is settled and the call
 * counts through `calls` alone; until then it may be counted twice (its row and its admission), so a refusal made
 * while admissions are unsettled is asked again once they settle, and only then is final.
 *
 * On SQLite (one box, one process) this process decides, as follows (the CPS window and the placements under way
 * are in memory).
 *
 * A call's admission reads the account's balance and live calls in one statement and decides without waiting for
 * the account's other admissions: the store's count misses the calls this process is placing now, so every
 * placement that was not done before the read began counts on top of it (an upper bound: a placement done while
 * the read ran may be counted twice). A call that fits under that bound is admitted at once; one that may not (near
 * the concurrency cap, or the balance near its live calls' first minutes) takes the account's turn, the exact path:
 * it waits until the account's placements under way have settled, lets no other call of the account take the fast
 * path meanwhile, and reads again: the count is then exact. On PostgreSQL a busy account's calls no longer queue
 * behind each other's round trips (they did for two round trips a leg), only near their limits.
 */
export class StoreAdmission implements Admission {
  readonly #db: Db;
  readonly #clock: Pick<Clock, 'now'>;
  /** Per account, when its calls of the last second were admitted, oldest first. */
  readonly #admittedAt = new Map<string, Fifo<number>>();
  readonly #accounts = new Map<string, AccountAdmissions>();
  /** Orders reads against placements: a placement done at a tick before a read's began is seen by that read. */
  #tick = 0;
  /** Admissions not yet decided (id -> when asked; insertion order = age) and the longest wait. */
  readonly #waiting = new Map<number, number>();
  #waitSeq = 0;
  #maxTurnWaitMs = 0;
  /** This process is draining (SIGTERM, `simu node drain`): new calls are refused as when the platform is paused. */
  #nodeDraining = false;

  /** `clock`: the slice of the kit's clock admission reads (the CPS window). */
  constructor(db: Db, clock: Pick<Clock, 'now'> = systemClock) {
    this.#db = db;
    this.#clock = clock;
  }

  /** Refuses every new call from now on (PLATFORM.0503 with Retry-After); calls already admitted go on. */
  drainNode(): void {
    this.#nodeDraining = true;
  }

  async admit<T>(req: AdmissionRequest, place: () => Promise<T>): Promise<T> {
    // The wait is counted from the call's arrival, its own reads included (what overload control wants to know).
    const id = this.#waitSeq++;
    this.#waiting.set(id, this.#clock.now());
    try {
      const pre = await this.#before(req);
      if (isPostgres(this.#db)) return await this.#inStore(req, pre, place, id);
      if (this.#account(req.accountId).queued === 0) {
        const fast = await this.#attempt(req, pre, place, id, false);
        if (fast !== NEAR_LIMIT) return fast;
      }
      return await this.#inTurn(req, pre, place, id);
    } finally {
      this.#waiting.delete(id);
    }
  }

  /**
   * How long new calls wait to be admitted: the longest wait since the previous sample, or the age of the oldest
   * still waiting (ms). A call near its account's limits waits for the account's turn, and a busy account's calls
   * queue there long before the store or the event loop look busy; overload control reads it.
   */
  sampleTurnWait(): number {
    const oldest = this.#waiting.values().next();
    const wait = Math.max(this.#maxTurnWaitMs, oldest.done ? 0 : this.#clock.now() - oldest.value);
    this.#maxTurnWaitMs = 0;
    return wait;
  }

  /** Account status, draining and the destination's first-minute price: refusals that need no store read. */
  async #before(req: AdmissionRequest): Promise<Prechecked> {
    // The account's settings from the per-process cache; its balance (never cached: money) is read with its calls.
    const account = await findAccountSettings(this.#db, req.accountId);
    if (!account || account.status !== 'active') throw suspended();
    if (this.#nodeDraining || (await getSettingCached(this.#db, 'draining')) === 'true')
      throw new AdmissionRefusedError(
        ReasonCodes.platformPaused,
        'The platform is paused for maintenance and is not admitting new calls; retry shortly.',
        30,
      );
    return { account, minimum: Math.max(1, await this.#firstMinuteCents(req.to)) };
  }

  /** The exact path: one admission of the account at a time, once its placements under way have settled. */
  #inTurn<T>(req: AdmissionRequest, pre: Prechecked, place: () => Promise<T>, id: number): Promise<T> {
    const acc = this.#account(req.accountId);
    acc.queued++;
    const run = (acc.turn ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        // No fast-path placement starts while this account has a turn queued: these are all there are.
        await Promise.all([...acc.placements].map((p) => p.settled));
        return this.#attempt(req, pre, place, id, true) as Promise<T>;
      });
    const tail = run.catch(() => undefined);
    acc.turn = tail;
    void tail.then(() => {
      acc.queued--;
      if (acc.turn === tail) acc.turn = undefined;
      this.#prune(req.accountId, acc);
    });
    return run;
  }

  /**
   * Reads the account's balance and live calls, decides, and places the call if admitted. From the read's answer
   * to the placement's start nothing awaits, so no other admission of the account can be placed in between.
   * `exact` (the turn): nothing of the account is being placed, the count is exact and a refusal is final; else a
   * call that may not fit under the upper bound gets NEAR_LIMIT.
   */
  async #attempt<T>(
    req: AdmissionRequest,
    pre: Prechecked,
    place: () => Promise<T>,
    id: number,
    exact: boolean,
  ): Promise<T | typeof NEAR_LIMIT> {
    const acc = this.#account(req.accountId);
    const at = ++this.#tick;
    acc.reads.add(at);
    try {
      const funds = await balanceAndLiveCalls(this.#db, req.accountId);
      if (!funds) throw suspended();
      if (!exact && acc.queued > 0) return NEAR_LIMIT;
      let live = funds.live;
      for (const p of acc.placements) if (p.doneAt > at) live++;
      // Every live call of the account holds its first block (billing pays it on answer), so the balance must cover
      // one more first minute at this destination's rate on top of the calls already up: concurrent placements
      // cannot all be admitted against the same money. (The live calls are held at this call's rate: an
      // approximation that errs towards admitting fewer when rates differ a lot.) The balance as read now: a
      // settlement landing meanwhile is as if it landed after.
      const { account, minimum } = pre;
      const covered = funds.balanceCents >= minimum * (live + 1);
      const underCap = live < account.max_concurrent_calls;
      if (!exact && !(covered && underCap)) return NEAR_LIMIT;
      this.#endWait(id);
      if (!covered) throw insufficient();
      if (!underCap) throw overCap(live, account.max_concurrent_calls);
      this.#takeCpsSlot(req.accountId, account.max_cps);
      return await this.#place(acc, place);
    } finally {
      acc.reads.delete(at);
      this.#prune(req.accountId, acc);
    }
  }

  /** PostgreSQL: the store decides; the admission is settled once `place` has written the call (or failed). */
  async #inStore<T>(req: AdmissionRequest, pre: Prechecked, place: () => Promise<T>, id: number): Promise<T> {
    const { account, minimum } = pre;
    for (let attempt = 0; ; attempt++) {
      const r = await admitInStore(this.#db, {
        accountId: req.accountId,
        nodeId: storeNodeId(),
        maxConcurrent: account.max_concurrent_calls,
        maxCps: account.max_cps,
        minimumCents: minimum,
        staleMs: STORE_STALE_MS,
      });
      if (r.verdict === 'missing') throw suspended();
      if (r.verdict === 'ok') {
        this.#endWait(id);
        const admissionId = r.admissionId!;
        const run = Promise.resolve().then(place);
        // Unsettled, the call would count twice until the admission goes stale: conservative, never over a limit.
        const settle = () => settleAdmission(this.#db, admissionId).catch(() => undefined);
        void run.then(settle, settle);
        return await run;
      }
      // The calls-per-second window counts settled admissions too: waiting changes nothing.
      if (r.verdict !== 'cps' && r.placing > 0 && attempt < STORE_RETRIES) {
        await sleep(Math.min(2 ** attempt, 20));
        continue;
      }
      this.#endWait(id);
      if (r.verdict === 'balance') throw insufficient();
      if (r.verdict === 'cap') throw overCap(r.live + r.placing, account.max_concurrent_calls);
      throw overCps(r.recent, account.max_cps);
    }
  }

  /** Runs `place`, counted as under way (synchronously, before anything awaits) until it settles. */
  #place<T>(acc: AccountAdmissions, place: () => Promise<T>): Promise<T> {
    const p: Placement = { doneAt: Infinity, settled: Promise.resolve() };
    acc.placements.add(p);
    const run = Promise.resolve().then(place);
    p.settled = run.then(
      () => this.#placed(p),
      () => this.#placed(p),
    );
    return run;
  }

  #placed(p: Placement): void {
    p.doneAt = ++this.#tick;
  }

  /**
   * The calls-per-second window (in memory): refuses when the account placed max_cps calls in the last second. The
   * window drops its expired stamps from the front, never filtering a copy of the whole second's stamps, which made
   * garbage on every call of a busy account.
   */
  #takeCpsSlot(accountId: string, maxCps: number): void {
    const now = this.#clock.now();
    let window = this.#admittedAt.get(accountId);
    if (window === undefined) {
      window = new Fifo<number>();
      this.#admittedAt.set(accountId, window);
    }
    while (window.length > 0 && window.peek()! <= now - 1000) window.shift();
    if (window.length >= maxCps) throw overCps(window.length, maxCps);
    window.push(now);
  }

  #endWait(id: number): void {
    this.#maxTurnWaitMs = Math.max(this.#maxTurnWaitMs, this.#clock.now() - (this.#waiting.get(id) ?? 0));
    this.#waiting.delete(id);
  }

  #account(accountId: string): AccountAdmissions {
    let acc = this.#accounts.get(accountId);
    if (!acc) {
      acc = { placements: new Set(), reads: new Set(), turn: undefined, queued: 0 };
      this.#accounts.set(accountId, acc);
    }
    return acc;
  }

  /** Forgets placements every read under way began after (they are in its count), and an idle account. */
  #prune(accountId: string, acc: AccountAdmissions): void {
    let oldestRead = Infinity;
    for (const r of acc.reads) oldestRead = Math.min(oldestRead, r);
    for (const p of acc.placements) if (p.doneAt < oldestRead) acc.placements.delete(p);
    if (acc.placements.size === 0 && acc.reads.size === 0 && acc.queued === 0 && this.#accounts.get(accountId) === acc)
      this.#accounts.delete(accountId);
  }

  /** The per-minute outbound rate of the destination (longest matching prefix), 0 when none is set. */
  async #firstMinuteCents(to?: string): Promise<number> {
    if (!to) return 0;
    const digits = to.replace(/^\+/, '');
    let best: { len: number; cents: number } | undefined;
    for (const r of await ratesOfKindCached(this.#db, 'outbound')) {
      const p = r.prefix.replace(/^\+/, '');
      if (digits.startsWith(p) && (!best || p.length > best.len)) best = { len: p.length, cents: r.amount_cents };
    }
    return best?.cents ?? 0;
  }
}

const suspended = (): AdmissionRefusedError =>
  new AdmissionRefusedError(ReasonCodes.accountSuspended, 'The account is suspended; new calls are refused.');

const insufficient = (): AdmissionRefusedError =>
  new AdmissionRefusedError(ReasonCodes.insufficientBalance, 'The wallet balance is insufficient to place a call.');

const overCap = (live: number, max: number): AdmissionRefusedError =>
  new AdmissionRefusedError(
    ReasonCodes.concurrencyCap,
    `The account already has ${live} live calls, its maximum of simultaneous calls (${max}).`,
  );

const overCps = (recent: number, max: number): AdmissionRefusedError =>
  new AdmissionRefusedError(
    ReasonCodes.cpsLimit,
    `The account placed ${recent} calls in the last second, its calls-per-second limit (${max}).`,
  );
