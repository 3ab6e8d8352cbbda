import {
  countLiveCalls,
  getSettingCached,
  findAccountSettings,
  accountBalance,
  ratesOfKindCached,
  type AccountRow,
  type Db,
} from '../store/index.js';
import { ReasonCodes } from '../events/index.js';
import { systemClock, type Clock as KitClock } from '../kit/index.js';

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
   * Checks the caps and, when the call is admitted, runs `place` (which writes the call as live) while holding the
   * account's admission turn, so concurrent requests cannot all see the same free slot. Throws
   * AdmissionRefusedError on refusal, without running `place`.
   */
  admit<T>(req: AdmissionRequest, place: () => Promise<T>): Promise<T>;
}

/** What admission reads before taking the account's turn. */
interface Prechecked {
  account: AccountRow;
  minimum: number;
}

/** The slice of the kit's one clock admission reads (the CPS window). */
export type Clock = Pick<KitClock, 'now'>;

/**
 * Admission against the store, for one switch process: the CPS window and the per-account turn are in memory
 * (several nodes would share them through the store or Redis, see ARCHITECTURE.md "Beyond one box").
 */
export class StoreAdmission implements Admission {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #admittedAt = new Map<string, number[]>();
  readonly #turns = new Map<string, Promise<unknown>>();
  /** Admissions waiting for their account's turn (id -> when asked; insertion order = age) and the longest wait. */
  readonly #waiting = new Map<number, number>();
  #waitSeq = 0;
  #maxTurnWaitMs = 0;

  constructor(db: Db, clock: Clock = systemClock) {
    this.#db = db;
    this.#clock = clock;
  }

  async admit<T>(req: AdmissionRequest, place: () => Promise<T>): Promise<T> {
    // What does not depend on the calls being placed is read before the turn: the turn holds only the live count
    // and the placing, so an account's calls wait for each other as briefly as the store allows (on PostgreSQL each
    // read is a round trip, and a busy DID's calls queued here).
    // The wait is counted from the call's arrival, its own reads included (what overload control wants to know).
    const id = this.#waitSeq++;
    this.#waiting.set(id, this.#clock.now());
    let pre: Prechecked;
    try {
      pre = await this.#before(req);
    } catch (err) {
      this.#waiting.delete(id);
      throw err;
    }
    const prev = this.#turns.get(req.accountId) ?? Promise.resolve();
    const run = prev
      .catch(() => undefined)
      .then(() => {
        this.#maxTurnWaitMs = Math.max(this.#maxTurnWaitMs, this.#clock.now() - (this.#waiting.get(id) ?? 0));
        this.#waiting.delete(id);
        return this.#check(req, pre, place);
      });
    const tail = run.catch(() => undefined);
    this.#turns.set(req.accountId, tail);
    void tail.then(() => {
      if (this.#turns.get(req.accountId) === tail) this.#turns.delete(req.accountId);
    });
    return run;
  }

  /**
   * How long new calls wait for their account's admission turn: the longest wait since the previous sample, or the
   * age of the oldest still waiting (ms). Calls of one account are admitted one at a time, so a busy account's
   * calls queue here long before the store or the event loop look busy; overload control reads it.
   */
  sampleTurnWait(): number {
    const oldest = this.#waiting.values().next();
    const wait = Math.max(this.#maxTurnWaitMs, oldest.done ? 0 : this.#clock.now() - oldest.value);
    this.#maxTurnWaitMs = 0;
    return wait;
  }

  /** Account status, draining and the destination's first-minute price: refusals that need no turn. */
  async #before(req: AdmissionRequest): Promise<Prechecked> {
    // The account's settings from the per-process cache, its balance (never cached: money) read alone.
    const settings = await findAccountSettings(this.#db, req.accountId);
    const balance = settings ? await accountBalance(this.#db, req.accountId) : undefined;
    const account = settings && balance !== undefined ? { ...settings, balance_cents: balance } : undefined;
    if (!account || account.status !== 'active')
      throw new AdmissionRefusedError(ReasonCodes.accountSuspended, 'The account is suspended; new calls are refused.');
    if ((await getSettingCached(this.#db, 'draining')) === 'true')
      throw new AdmissionRefusedError(
        ReasonCodes.platformPaused,
        'The platform is paused for maintenance and is not admitting new calls; retry shortly.',
        30,
      );
    return { account, minimum: Math.max(1, await this.#firstMinuteCents(req.to)) };
  }

  async #check<T>(req: AdmissionRequest, pre: Prechecked, place: () => Promise<T>): Promise<T> {
    // The balance and caps as read just before the turn (a settlement landing meanwhile is as if it landed after);
    // the live count is read in the turn, where no other placement of the account can change it.
    const { account, minimum } = pre;
    // Every live call of the account holds its first block (billing pays it on answer), so the balance must cover
    // one more first minute at this destination's rate on top of the calls already up: concurrent placements
    // cannot all be admitted against the same money. (The live calls are held at this call's rate: an
    // approximation that errs towards admitting fewer when rates differ a lot.)
    const live = await countLiveCalls(this.#db, req.accountId);
    if (account.balance_cents < minimum * (live + 1))
      throw new AdmissionRefusedError(
        ReasonCodes.insufficientBalance,
        'The wallet balance is insufficient to place a call.',
      );
    if (live >= account.max_concurrent_calls)
      throw new AdmissionRefusedError(
        ReasonCodes.concurrencyCap,
        `The account already has ${live} live calls, its maximum of simultaneous calls (${account.max_concurrent_calls}).`,
      );
    const now = this.#clock.now();
    const window = (this.#admittedAt.get(req.accountId) ?? []).filter((t) => t > now - 1000);
    if (window.length >= account.max_cps) {
      this.#admittedAt.set(req.accountId, window);
      throw new AdmissionRefusedError(
        ReasonCodes.cpsLimit,
        `The account placed ${window.length} calls in the last second, its calls-per-second limit (${account.max_cps}).`,
      );
    }
    window.push(now);
    this.#admittedAt.set(req.accountId, window);
    return place();
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
