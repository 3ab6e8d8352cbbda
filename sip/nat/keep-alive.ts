/**
 * Keeping the NAT bindings of registered phones open. A phone behind a home router registers over
 * UDP; the router forgets the mapping after its UDP timeout (30 s on Linux conntrack, often 30-120 s on routers)
 * unless packets keep crossing it, and then nothing the switch sends reaches the phone. Like Kamailio's nathelper
 * (`nat_keepalive`) and Asterisk's `qualify`, the switch sends each UDP binding an OPTIONS every interval, to the
 * address the REGISTER came from (the binding's source, as every request to the phone is sent: nathelper's
 * fix_nated_register / received). Any answer proves the flow alive, even 404 or 405; `misses` keep-alives in a row
 * without one mean the flow is dead (the phone left, its router rebooted) and its binding is dropped at once rather
 * than at expiry, so calls stop ringing a phone that cannot hear them.
 *
 * A binding registered with RFC 5626 outbound (`;ob`, reg-id and +sip.instance) keeps its own flow alive (the
 * registrar answers it with `Flow-Timer`): over a connection it is left to the connection (its close drops the
 * binding); over UDP the switch sends it a CRLF keep-alive (RFC 5626 §4.4) each interval as well, which keeps the
 * NAT open in the direction phones' own STUN keep-alives cannot be relied on for, and costs the phone nothing.
 */
import type { Logger } from '../../config/index.js';
import type { Clock, TimerHandle, UserAgent } from '../stack/index.js';
import type { Binding, EmptiedUser, LocationService } from '../location.js';

export interface KeepAliveSettings {
  /** Interval between two keep-alives to one binding, ms; 0: none. */
  intervalMs: number;
  /** Keep-alives in a row left unanswered before the binding is dropped. */
  misses: number;
}

export interface NatKeepAliveOptions {
  ua: UserAgent;
  location: LocationService;
  clock: Clock;
  logger: Logger;
  settings: KeepAliveSettings;
  /** Bindings dropped as dead flows: the end-users left with none (the registrar writes them unregistered). */
  onDropped(emptied: EmptiedUser[], dropped: Binding): void;
}

interface FlowState {
  nextAt: number;
  missed: number;
  inFlight: boolean;
}

const keyOf = (b: Binding): string => `${b.accountId}\u0000${b.extension}\u0000${b.contact}`;

/**
 * Keys of the flows due, by slot of `stepMs` (a timer wheel without a fixed size): a tick takes the slots that have
 * come and touches only the flows in them, not every binding (at 100,000 phones a walk of all of them each second
 * was the cost of keep-alives, due or not).
 */
class DueSlots {
  readonly #slots = new Map<number, string[]>();
  /** The first slot not yet taken; undefined until the first use. */
  #next?: number;

  constructor(readonly stepMs: number) {}

  /** `key` is due at `at` (taken by the first take() at or after it). */
  add(key: string, at: number): void {
    const slot = Math.max(this.#next ?? -Infinity, Math.ceil(at / this.stepMs));
    const keys = this.#slots.get(slot);
    if (keys) keys.push(key);
    else this.#slots.set(slot, [key]);
  }

  /** The keys of every slot that has come by `now`, earliest first. */
  *take(now: number): Iterable<string> {
    const last = Math.floor(now / this.stepMs);
    const first = this.#next ?? last;
    this.#next = last + 1;
    // After a long pause (the clock moved far), the slots held rather than every slot in between.
    const slots =
      last - first > this.#slots.size
        ? [...this.#slots.keys()].filter((k) => k <= last).sort((a, b) => a - b)
        : Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i);
    for (const slot of slots) {
      const keys = this.#slots.get(slot);
      if (!keys) continue;
      this.#slots.delete(slot);
      yield* keys;
    }
  }
}

export class NatKeepAlive {
  readonly #o: NatKeepAliveOptions;
  readonly #flows = new Map<string, FlowState>();
  readonly #due: DueSlots;
  #timer?: TimerHandle;
  #closed = false;
  /**
   * Keep-alives sent, bindings dropped and flows looked at by ticks since start (figures for tests and logs; a tick
   * looks only at the flows due).
   */
  readonly stats = { options: 0, crlf: 0, answered: 0, missed: 0, dropped: 0, examined: 0 };

  constructor(opts: NatKeepAliveOptions) {
    this.#o = opts;
    this.#due = new DueSlots(Math.max(100, Math.min(1000, Math.floor(opts.settings.intervalMs / 4))));
  }

  get enabled(): boolean {
    return this.#o.settings.intervalMs > 0;
  }

  start(): void {
    if (!this.enabled || this.#closed) return;
    this.#schedule();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * A UDP binding was added or refreshed (the registrar calls this for each): its first keep-alive is due one
   * interval after it was first seen. Others are left alone.
   */
  track(b: Binding): void {
    if (!this.enabled || this.#closed || b.transport !== 'UDP') return;
    const key = keyOf(b);
    if (this.#flows.has(key)) return;
    const nextAt = this.#o.clock.now() + this.#o.settings.intervalMs;
    this.#flows.set(key, { nextAt, missed: 0, inFlight: false });
    this.#due.add(key, nextAt);
  }

  /** Checks often enough that each binding is reached within a quarter of the interval of its due time. */
  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.tick();
      this.#schedule();
    }, this.#due.stepMs);
  }

  /** Sends what is due: one keep-alive per UDP binding per interval, the first one interval after it registered. */
  tick(): void {
    const now = this.#o.clock.now();
    for (const key of this.#due.take(now)) {
      const s = this.#flows.get(key);
      if (!s || s.nextAt > now) continue; // gone, or due later (this was an earlier slot of it)
      this.stats.examined += 1;
      const b = this.#binding(key, now);
      if (!b) {
        this.#flows.delete(key); // unregistered, expired or no longer over UDP: nothing to keep open
        continue;
      }
      // The last keep-alive is still waiting for its answer: look again at the next tick.
      s.nextAt = now + (s.inFlight ? this.#due.stepMs : this.#o.settings.intervalMs);
      this.#due.add(key, s.nextAt);
      if (s.inFlight) continue;
      if (b.outbound) this.#crlf(b);
      else this.#options(b, s);
    }
  }

  /** The live UDP binding a flow key names, if it still exists. */
  #binding(key: string, now: number): Binding | undefined {
    const [accountId, extension, contact] = key.split('\u0000') as [string, string, string];
    const b = this.#o.location.get(accountId, extension, contact);
    return b && b.transport === 'UDP' && b.expiresAt > now ? b : undefined;
  }

  /** A REGISTER refreshed the binding from the same place: the flow is alive (its own packets crossed the NAT). */
  heard(b: Binding): void {
    const s = this.#flows.get(keyOf(b));
    if (s) s.missed = 0;
  }

  #crlf(b: Binding): void {
    this.stats.crlf += 1;
    this.#o.ua
      .sendKeepAlive({ transport: 'UDP', host: b.sourceAddress, port: b.sourcePort })
      .catch((err: unknown) => this.#o.logger.debug({ err, contact: b.contact }, 'CRLF keep-alive not sent'));
  }

  #options(b: Binding, s: FlowState): void {
    this.stats.options += 1;
    s.inFlight = true;
    const waitMs = this.#o.settings.intervalMs;
    let timer: TimerHandle | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = this.#o.clock.setTimeout(() => resolve(false), waitMs);
    });
    const answered = this.#o.ua
      .request(b.contact, {
        method: 'OPTIONS',
        proxy: { transport: 'UDP', host: b.sourceAddress, port: b.sourcePort },
        to: `<${b.contact}>`,
      })
      .then(() => true)
      .catch(() => false);
    void Promise.race([answered, timeout]).then((ok) => {
      if (timer) this.#o.clock.clearTimeout(timer);
      s.inFlight = false;
      if (this.#closed) return;
      if (ok) {
        this.stats.answered += 1;
        s.missed = 0;
        return;
      }
      this.stats.missed += 1;
      s.missed += 1;
      if (s.missed < this.#o.settings.misses) return;
      // Only the binding that went unanswered, and only if it was not replaced meanwhile (a new REGISTER from
      // elsewhere moved it: another source or port; its new flow starts with no miss, on the same schedule).
      const emptied = this.#o.location.dropIf(b.accountId, b.extension, b.contact, (cur) => sameFlow(cur, b));
      if (emptied === undefined) {
        s.missed = 0;
        return;
      }
      this.#flows.delete(keyOf(b));
      this.stats.dropped += 1;
      this.#o.logger.info(
        { accountId: b.accountId, extension: b.extension, contact: b.contact, misses: s.missed },
        'dead flow: binding dropped',
      );
      this.#o.onDropped(emptied, b);
    });
  }
}

function sameFlow(a: Binding, b: Binding): boolean {
  return a.sourceAddress === b.sourceAddress && a.sourcePort === b.sourcePort && a.transport === b.transport;
}
