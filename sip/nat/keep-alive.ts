/**
 * Keeping the NAT bindings of registered phones open (issue 19 item 5). A phone behind a home router registers over
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

export class NatKeepAlive {
  readonly #o: NatKeepAliveOptions;
  readonly #flows = new Map<string, FlowState>();
  #timer?: TimerHandle;
  #closed = false;
  /** Keep-alives sent and bindings dropped since start (figures for tests and logs). */
  readonly stats = { options: 0, crlf: 0, answered: 0, missed: 0, dropped: 0 };

  constructor(opts: NatKeepAliveOptions) {
    this.#o = opts;
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

  /** Checks often enough that each binding is reached within a quarter of the interval of its due time. */
  #schedule(): void {
    if (this.#closed) return;
    const step = Math.max(100, Math.min(1000, Math.floor(this.#o.settings.intervalMs / 4)));
    this.#timer = this.#o.clock.setTimeout(() => {
      this.tick();
      this.#schedule();
    }, step);
  }

  /** Sends what is due: one keep-alive per UDP binding per interval, the first one interval after it registered. */
  tick(): void {
    const now = this.#o.clock.now();
    const live = new Set<string>();
    for (const b of this.#o.location.udpBindings()) {
      const key = keyOf(b);
      live.add(key);
      let s = this.#flows.get(key);
      if (!s) {
        s = { nextAt: now + this.#o.settings.intervalMs, missed: 0, inFlight: false };
        this.#flows.set(key, s);
      }
      if (s.inFlight || now < s.nextAt) continue;
      s.nextAt = now + this.#o.settings.intervalMs;
      if (b.outbound) this.#crlf(b);
      else this.#options(b, s);
    }
    for (const key of this.#flows.keys()) if (!live.has(key)) this.#flows.delete(key);
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
      this.#flows.delete(keyOf(b));
      // Only the binding that went unanswered, and only if it was not replaced meanwhile (a new REGISTER from
      // elsewhere moved it: another source or port).
      const emptied = this.#o.location.dropIf(b.accountId, b.extension, b.contact, (cur) => sameFlow(cur, b));
      if (emptied === undefined) return;
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
