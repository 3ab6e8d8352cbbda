import type { LegAudioPort } from '../../media/index.js';
import type { Clock } from '../../kit/index.js';
import type { QueueOutcome, QueueResult, QueueTicket } from '../../verbs/index.js';

/**
 * The call queues of this process, in memory: a queue is an account's name with its waiting
 * callers in the order they joined. Nothing is stored: after a restart the calls are gone too (the reconcile sweep
 * closes them). On several nodes a queue is held by one node (a lease in the store, taken and freed through
 * `onQueueMade` and `onQueueEnded`); calls of other nodes take part through legs between the nodes (node-queue.ts).
 */

/** Most distinct queues one account may hold at once (a queue exists while it has callers or agents waiting). */
export const MAX_QUEUES_PER_ACCOUNT = 100;

export interface QueueMemberInfo {
  readonly callId: string;
  readonly callSid: string;
  readonly position: number;
  readonly waitSeconds: number;
  readonly joinedAt: string;
}

export interface QueueInfo {
  readonly name: string;
  readonly size: number;
  /** Mean seconds in the queue of the callers who left it since it was created, and those waiting now. */
  readonly averageWaitSeconds: number;
}

/** What the queue needs of a waiting call to bridge it (calls/queue/queue-bridge.ts does the audio). */
export interface QueueCall {
  readonly callId: string;
  readonly callSid: string;
  /** The caller's audio at our end of its leg (throws MediaError when that leg is gone). */
  port(): LegAudioPort;
  /** An event on the caller's call (QUEUE.*). */
  emit(code: 'QUEUE.0100' | 'QUEUE.0200' | 'QUEUE.0300', data: Record<string, unknown>): void;
}

class Member {
  readonly hold = new AbortController();
  readonly outcome: Promise<QueueOutcome>;
  #settle!: (o: QueueOutcome) => void;
  state: 'waiting' | 'bridged' | 'left' = 'waiting';
  queueTimeMs = 0;
  /** Aborted when the member's call leaves while bridged: the bridge ends. */
  readonly gone = new AbortController();

  constructor(
    readonly call: QueueCall,
    readonly joinedAt: number,
  ) {
    this.outcome = new Promise((r) => (this.#settle = r));
  }

  settle(o: QueueOutcome): void {
    this.#settle(o);
  }
}

class CallQueue {
  readonly members: Member[] = [];
  /** Agents waiting for a caller, oldest first. */
  readonly agents: ((m: Member) => void)[] = [];
  waitedMs = 0;
  left = 0;
}

export interface QueueEvents {
  joined(call: QueueCall, name: string, position: number): void;
  bridged(call: QueueCall, name: string, queueTimeSeconds: number, agentCallId: string): void;
  left(call: QueueCall, name: string, result: QueueResult, queueTimeSeconds: number): void;
}

/** What the REST API reads and does with the queues (api/routes/queues.ts). */
/** The API's view of queues; asynchronous where it spans nodes (calls/node-routed-call-engine.ts). */
export interface QueueDirectory {
  list(accountId: string): QueueInfo[] | Promise<QueueInfo[]>;
  members(accountId: string, name: string): QueueMemberInfo[] | undefined | Promise<QueueMemberInfo[] | undefined>;
  dequeueToUrl(accountId: string, name: string, callId: string | 'front', url: string): boolean | Promise<boolean>;
}

/** Told when a queue comes to exist here and when it is forgotten (its lease in the store is taken and freed). */
export interface QueueLifeHooks {
  onQueueMade?(accountId: string, name: string): void;
  onQueueEnded?(accountId: string, name: string): void;
}

export class QueueRegistry implements QueueDirectory {
  readonly #queues = new Map<string, Map<string, CallQueue>>();
  readonly #clock: Pick<Clock, 'now'>;
  readonly #events: QueueEvents;
  readonly #hooks: QueueLifeHooks;

  constructor(clock: Pick<Clock, 'now'>, events: QueueEvents, hooks: QueueLifeHooks = {}) {
    this.#clock = clock;
    this.#events = events;
    this.#hooks = hooks;
  }

  #queue(accountId: string, name: string, create: boolean): CallQueue | undefined {
    let byName = this.#queues.get(accountId);
    if (!byName && create) this.#queues.set(accountId, (byName = new Map()));
    let q = byName?.get(name);
    if (!q && create && byName && byName.size < MAX_QUEUES_PER_ACCOUNT) {
      byName.set(name, (q = new CallQueue()));
      this.#hooks.onQueueMade?.(accountId, name);
    }
    return q;
  }

  /** A queue with no callers nor agents is forgotten (its average wait with it). */
  #tidy(accountId: string, name: string, q: CallQueue): void {
    if (q.members.length > 0 || q.agents.length > 0) return;
    const byName = this.#queues.get(accountId);
    if (byName?.get(name) !== q) return;
    byName.delete(name);
    if (byName.size === 0) this.#queues.delete(accountId);
    this.#hooks.onQueueEnded?.(accountId, name);
  }

  /** Whether a caller joining the queue now would be taken (not full, and not one queue too many). */
  hasRoom(accountId: string, name: string, maxSize: number): boolean {
    const byName = this.#queues.get(accountId);
    const q = byName?.get(name);
    if (q) return q.members.length < maxSize;
    return (byName?.size ?? 0) < MAX_QUEUES_PER_ACCOUNT && maxSize > 0;
  }

  /** The caller joins the queue; full (maxSize, or too many queues): a ticket whose outcome is queue-full. */
  join(accountId: string, name: string, call: QueueCall, maxSize: number): QueueTicket {
    const q = this.#queue(accountId, name, true);
    const member = new Member(call, this.#clock.now());
    if (!q || q.members.length >= maxSize) {
      member.state = 'left';
      member.hold.abort();
      member.settle({ result: 'queue-full', queueTimeSeconds: 0 });
      return this.#ticket(accountId, name, member);
    }
    const agent = q.agents.shift();
    q.members.push(member);
    this.#events.joined(call, name, q.members.length);
    if (agent) agent(member);
    return this.#ticket(accountId, name, member);
  }

  #ticket(accountId: string, name: string, m: Member): QueueTicket {
    const q = (): CallQueue | undefined => this.#queue(accountId, name, false);
    return {
      position: () => (q()?.members.indexOf(m) ?? -1) + 1,
      size: () => q()?.members.length ?? 0,
      waitedSeconds: () => (this.#clock.now() - m.joinedAt) / 1000,
      averageWaitSeconds: () => this.#average(q()),
      holdOver: m.hold.signal,
      outcome: m.outcome,
      leave: (result) => this.#leave(accountId, name, m, result),
    };
  }

  #leave(accountId: string, name: string, m: Member, result: QueueResult, redirectUrl?: string): void {
    if (m.state === 'bridged') {
      m.gone.abort(); // the bridge ends; its runner settles the outcome
      return;
    }
    if (m.state === 'left') return;
    m.state = 'left';
    const q = this.#queue(accountId, name, false);
    const queueTime = this.#removeFrom(q, m);
    m.hold.abort();
    this.#events.left(m.call, name, result, queueTime);
    m.settle({ result, queueTimeSeconds: queueTime, ...(redirectUrl === undefined ? {} : { redirectUrl }) });
    if (q) this.#tidy(accountId, name, q);
  }

  /** Takes the member out of the queue's list; answers its whole seconds in the queue. */
  #removeFrom(q: CallQueue | undefined, m: Member): number {
    m.queueTimeMs = this.#clock.now() - m.joinedAt;
    const at = q?.members.indexOf(m) ?? -1;
    if (q && at >= 0) {
      q.members.splice(at, 1);
      q.waitedMs += m.queueTimeMs;
      q.left += 1;
    }
    return Math.round(m.queueTimeMs / 1000);
  }

  #average(q: CallQueue | undefined): number {
    if (!q) return 0;
    const now = this.#clock.now();
    const waiting = q.members.reduce((sum, m) => sum + (now - m.joinedAt), 0);
    const n = q.left + q.members.length;
    return n === 0 ? 0 : (q.waitedMs + waiting) / n / 1000;
  }

  /**
   * <Dial><Queue>: takes the longest-waiting caller (waiting up to `timeoutMs` for one when the queue is empty)
   * and runs `bridge` with it until either side ends. Answers the bridge's length in ms, or undefined when no caller
   * came (or `signal` aborted first).
   */
  async dequeueToAgent(
    accountId: string,
    name: string,
    agentCallId: string,
    bridge: (member: QueueCall, memberGone: AbortSignal) => Promise<void>,
    opts: { readonly timeoutMs: number; readonly signal: AbortSignal },
  ): Promise<number | undefined> {
    const member = await this.#nextMember(accountId, name, opts);
    if (!member) return undefined;
    const q = this.#queue(accountId, name, false);
    const queueTime = this.#removeFrom(q, member);
    member.hold.abort();
    this.#events.bridged(member.call, name, queueTime, agentCallId);
    const started = this.#clock.now();
    try {
      await bridge(member.call, member.gone.signal);
    } finally {
      this.#events.left(member.call, name, 'bridged', queueTime);
      member.settle({ result: 'bridged', queueTimeSeconds: queueTime });
      if (q) this.#tidy(accountId, name, q);
    }
    return this.#clock.now() - started;
  }

  #nextMember(
    accountId: string,
    name: string,
    opts: { readonly timeoutMs: number; readonly signal: AbortSignal },
  ): Promise<Member | undefined> {
    const first = this.#queue(accountId, name, false)?.members.find((m) => m.state === 'waiting');
    if (first) {
      first.state = 'bridged'; // claimed at once: a second agent cannot take the same caller
      return Promise.resolve(first);
    }
    const q = this.#queue(accountId, name, true);
    if (!q || opts.signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const done = (m: Member | undefined): void => {
        clearTimeout(timer);
        opts.signal.removeEventListener('abort', stop);
        const at = q.agents.indexOf(done);
        if (at >= 0) q.agents.splice(at, 1);
        if (m) m.state = 'bridged';
        else this.#tidy(accountId, name, q);
        resolve(m);
      };
      const stop = (): void => done(undefined);
      const timer = setTimeout(stop, opts.timeoutMs);
      opts.signal.addEventListener('abort', stop, { once: true });
      q.agents.push(done);
    });
  }

  /** REST: every queue of the account with its size and average wait. */
  list(accountId: string): QueueInfo[] {
    return [...(this.#queues.get(accountId) ?? new Map<string, CallQueue>()).entries()].map(([name, q]) => ({
      name,
      size: q.members.length,
      averageWaitSeconds: Math.round(this.#average(q)),
    }));
  }

  /** REST: the callers waiting in a queue, longest first; undefined when the account has no such queue. */
  members(accountId: string, name: string): QueueMemberInfo[] | undefined {
    const q = this.#queue(accountId, name, false);
    if (!q) return undefined;
    const now = this.#clock.now();
    return q.members.map((m, i) => ({
      callId: m.call.callId,
      callSid: m.call.callSid,
      position: i + 1,
      waitSeconds: Math.round((now - m.joinedAt) / 1000),
      joinedAt: new Date(m.joinedAt).toISOString(),
    }));
  }

  /** REST: the waiting caller `callId` (or the front one) leaves the queue to run the document at `url`. */
  dequeueToUrl(accountId: string, name: string, callId: string | 'front', url: string): boolean {
    const q = this.#queue(accountId, name, false);
    const m = callId === 'front' ? q?.members[0] : q?.members.find((x) => x.call.callId === callId);
    if (!m || m.state !== 'waiting') return false;
    this.#leave(accountId, name, m, 'redirected', url);
    return true;
  }
}
