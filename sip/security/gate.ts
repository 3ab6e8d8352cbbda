import { roomLogger, type Logger } from '../../config/index.js';
import { sourceKey, TrustedAddresses } from './address.js';
import { GenerationalMap, makeRoom } from './bounded-map.js';
import { BanList, type BanReason, type BanRecord, type BanStore } from './ban-list.js';
import { systemClock, type SecurityClock } from './clock.js';
import { RateWindows } from './rate-window.js';
import { ScannerUserAgents } from './scanners.js';
import { resolveSettings, type SecuritySettings, type SecuritySettingsInput } from './settings.js';

/** What the gate is told about an incoming request: plain values, so it needs nothing of the SIP stack. */
export interface IncomingRequest {
  /** The IP the packet or connection came from (no port). */
  source: string;
  transport: string;
  method: string;
  /** The User-Agent header value, if any. */
  userAgent?: string;
}

export type GateDecision = 'allow' | 'drop';

/** An authentication outcome; `account` + `user` name the end-user (account id and extension). */
export interface AuthEvent {
  source: string;
  account?: string;
  user?: string;
}

/** What `authFailed` did: counted only, banned the source, or locked the end-user's credential. */
export type AuthFailureOutcome = 'counted' | 'source-banned' | 'user-locked' | 'source-banned+user-locked';

/**
 * The registrar's answer to "which addresses hold a current registration of this end-user?" (IPs, no port). A
 * locked-out user stays usable from those addresses, so a password-guessing attack does not cut off their phones.
 */
export interface RegistrationLookup {
  addressesFor(account: string, user: string): Iterable<string>;
}

export interface SecurityGateOptions {
  settings?: SecuritySettingsInput;
  clock?: SecurityClock;
  /** Persistence of bans (knexBanStore(db)); without it bans live in memory only. */
  store?: BanStore;
  registrations?: RegistrationLookup;
  logger?: Logger;
}

export interface SecurityStats {
  inspected: number;
  allowed: number;
  dropped: { banned: number; scanner: number; flood: number };
  /** Of dropped.banned, those refused by admitSource() before parsing. */
  droppedBeforeParse: number;
  droppedByMethod: Record<string, number>;
  droppedByTransport: Record<string, number>;
  bansIssued: Record<BanReason, number>;
  bansActive: number;
  bansLiftedByOperator: number;
  authFailures: number;
  authSuccesses: number;
  userLockouts: number;
  lockedOutRefusals: number;
  lockedUsers: number;
  trackedSources: number;
  trackedUsers: number;
  /** Counter entries pushed out because a table was full (a spoofed-source flood shows here). */
  evictions: number;
}

// Attackers choose the method token; only these get their own counter so the stats object stays bounded.
const KNOWN_METHODS = new Set([
  'INVITE',
  'ACK',
  'BYE',
  'CANCEL',
  'OPTIONS',
  'REGISTER',
  'SUBSCRIBE',
  'NOTIFY',
  'PUBLISH',
  'MESSAGE',
  'INFO',
  'PRACK',
  'UPDATE',
  'REFER',
]);
const KNOWN_TRANSPORTS = new Set(['udp', 'tcp', 'tls', 'ws', 'wss', 'sctp']);

const userKey = (account: string | undefined, user: string | undefined): string | undefined =>
  user === undefined || user === '' ? undefined : `${account ?? ''}\u0000${user}`;

/**
 * The SIP edge's first judge: every incoming request is put to `inspect()` before the stack does any work for it.
 * Order of checks (cheapest first): a banned source (one Map lookup), a trusted trunk address, a scanner's
 * User-Agent, then the per-source flood window. Dropped requests get no response at all (RFC 3261 lets a server
 * ignore a request it will not serve; any reply would confirm to a scanner that a SIP server is here).
 * The registrar reports authentication outcomes with `authFailed()` / `authSucceeded()` and asks `isLockedOut()`
 * before checking a password.
 */
export class SecurityGate {
  settings: SecuritySettings;
  #input: SecuritySettingsInput;
  readonly #clock: SecurityClock;
  readonly #log: Logger;
  readonly #bans: BanList;
  #trusted: TrustedAddresses;
  readonly #scanners: ScannerUserAgents;
  #floods: RateWindows;
  #scannerHits: RateWindows | undefined;
  readonly #scannerCounts: GenerationalMap<{ count: number; last: number }>;
  #sourceFailures: RateWindows;
  #userFailures: RateWindows;
  readonly #lockedUntil = new Map<string, number>();
  #registrations: RegistrationLookup | undefined;
  readonly #timers: Array<{ cancel(): void }> = [];
  #closed: Promise<void> | undefined;
  readonly #stats = {
    inspected: 0,
    allowed: 0,
    dropped: { banned: 0, scanner: 0, flood: 0 },
    droppedBeforeParse: 0,
    droppedByMethod: {} as Record<string, number>,
    droppedByTransport: {} as Record<string, number>,
    bansIssued: { flood: 0, 'auth-failures': 0, scanner: 0, operator: 0 } as Record<BanReason, number>,
    authFailures: 0,
    authSuccesses: 0,
    userLockouts: 0,
    lockedOutRefusals: 0,
    evictions: 0,
  };

  constructor(opts: SecurityGateOptions = {}) {
    this.#input = opts.settings ?? {};
    const s = (this.settings = resolveSettings(opts.settings));
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger ?? roomLogger('sip').child({ module: 'security' });
    this.#registrations = opts.registrations;
    this.#bans = new BanList({ store: opts.store, log: this.#log, maxBans: s.limits.maxBans });
    this.#trusted = new TrustedAddresses(s.trustedAddresses);
    this.#scanners = new ScannerUserAgents(s.scanners.userAgents);
    this.#scannerCounts = new GenerationalMap(s.limits.maxTrackedSources);
    [this.#floods, this.#scannerHits, this.#sourceFailures, this.#userFailures] = windowsOf(s);
    this.#timers.push(this.#clock.every(s.sweepSeconds * 1000, () => this.sweep()));
    if (opts.store) {
      this.#timers.push(this.#clock.every(s.pollSeconds * 1000, () => void this.syncBans()));
    }
  }

  /**
   * New limits for floods, failed authentications and scanners (a configuration reload): their counts start
   * afresh; bans and locked credentials in force stay. The sweep and poll intervals and table sizes keep theirs.
   */
  reconfigure(input: SecuritySettingsInput): void {
    this.#input = {
      ...this.#input,
      flood: { ...this.#input.flood, ...input.flood },
      auth: { ...this.#input.auth, ...input.auth },
      scanners: { ...this.#input.scanners, ...input.scanners },
    };
    this.settings = resolveSettings(this.#input);
    [this.#floods, this.#scannerHits, this.#sourceFailures, this.#userFailures] = windowsOf(this.settings);
  }

  /** Judges one incoming request. 'drop' means: send nothing back, spend nothing more on it. */
  inspect(req: IncomingRequest): GateDecision {
    const now = this.#clock.now();
    const key = sourceKey(req.source);
    this.#stats.inspected++;
    // A ban (automatic or by the operator) holds even for a trusted address: the operator's word is final.
    if (this.#bans.size > 0 && this.#bans.hit(key, now)) return this.#drop('banned', req);
    if (this.#trusted.has(key)) return this.#allow();
    if (this.#scanners.matches(req.userAgent)) {
      this.#countScanner(key, now);
      const banAfter = this.settings.scanners.banAfter;
      if (banAfter === 1 || (banAfter > 1 && this.#scannerHits!.hit(key, now))) {
        this.#ban(key, 'scanner', this.settings.scanners.banSeconds, now);
        this.#scannerHits?.forget(key);
      }
      return this.#drop('scanner', req);
    }
    if (this.#floods.hit(key, now)) {
      this.#ban(key, 'flood', this.settings.flood.banSeconds, now);
      this.#floods.forget(key);
      return this.#drop('flood', req);
    }
    return this.#allow();
  }

  /**
   * The check before parsing: a banned source is dropped before the stack spends anything on its bytes (a UDP
   * datagram, or a TCP/TLS/WS connection at accept time: close it). `inspect()` follows for what is admitted.
   */
  admitSource(source: string): GateDecision {
    if (this.#bans.size === 0 || !this.#bans.hit(sourceKey(source), this.#clock.now())) return 'allow';
    this.#stats.dropped.banned++;
    this.#stats.droppedBeforeParse++;
    return 'drop';
  }

  /** Reports a failed authentication (wrong password, unknown user, bad token: the registrar need not say which). */
  authFailed(ev: AuthEvent): AuthFailureOutcome {
    const now = this.#clock.now();
    const key = sourceKey(ev.source);
    this.#stats.authFailures++;
    if (this.#trusted.has(key)) return 'counted';
    let banned = false;
    let locked = false;
    if (this.#sourceFailures.hit(key, now)) {
      this.#ban(key, 'auth-failures', this.settings.auth.banSeconds, now);
      this.#sourceFailures.forget(key);
      banned = true;
    }
    // Unknown names are counted and locked exactly like real ones: a lockout that only real users could get
    // would itself tell an attacker which names exist.
    const uk = userKey(ev.account, ev.user);
    if (uk !== undefined && this.#userFailures.hit(uk, now)) {
      this.#lock(uk, now);
      this.#userFailures.forget(uk);
      locked = true;
    }
    if (banned && locked) return 'source-banned+user-locked';
    return banned ? 'source-banned' : locked ? 'user-locked' : 'counted';
  }

  /**
   * Reports a successful authentication. It forgets the end-user's recent failures (a phone with a stale nonce or a
   * just-changed token is not an attack) but not the source's: otherwise an attacker holding one good account could
   * reset its count between guesses at others. A running lockout is not lifted early.
   */
  authSucceeded(ev: AuthEvent): void {
    this.#stats.authSuccesses++;
    const uk = userKey(ev.account, ev.user);
    if (uk !== undefined) this.#userFailures.forget(uk);
  }

  /**
   * Whether the registrar must refuse this authentication attempt without checking the password: the source is
   * banned, or the end-user's credential is locked and this source holds no current registration of that user.
   * Refuse with the same answer as a wrong password (see docs/security.md), after `equaliseAuthFailure()`.
   */
  isLockedOut(ev: AuthEvent): boolean {
    const now = this.#clock.now();
    const key = sourceKey(ev.source);
    if (this.#bans.get(key, now)) return this.#refused();
    const uk = userKey(ev.account, ev.user);
    if (uk === undefined) return false;
    const until = this.#lockedUntil.get(uk);
    if (until === undefined) return false;
    if (now >= until) {
      this.#lockedUntil.delete(uk);
      return false;
    }
    if (this.#trusted.has(key)) return false;
    if (this.#registrations && ev.account !== undefined && ev.user !== undefined) {
      for (const a of this.#registrations.addressesFor(ev.account, ev.user)) {
        if (sourceKey(a) === key) return false;
      }
    }
    return this.#refused();
  }

  /** The registrar's hook: tells the gate which addresses hold registrations (see RegistrationLookup). */
  setRegistrationLookup(lookup: RegistrationLookup | undefined): void {
    this.#registrations = lookup;
  }

  /** Replaces the trusted addresses (call when trunks are added or removed). */
  setTrustedAddresses(addresses: Iterable<string>): void {
    this.#trusted = new TrustedAddresses(addresses);
  }

  /** Bans an address by hand (the running switch's side of an operator ban). */
  ban(address: string, seconds: number, reason: BanReason = 'operator'): BanRecord {
    return this.#ban(sourceKey(address), reason, seconds, this.#clock.now());
  }

  /** Bans in force in this process (the table may hold more if a sync is pending). */
  bans(): BanRecord[] {
    return this.#bans.list(this.#clock.now());
  }

  /** Scanner requests dropped per source (IPs seen within the last hour), the busiest first. */
  scannerSources(): Array<{ address: string; count: number }> {
    return [...this.#scannerCounts.entries()]
      .map(([address, v]) => ({ address, count: v.count }))
      .sort((a, b) => b.count - a.count);
  }

  stats(): SecurityStats {
    const s = this.#stats;
    return {
      inspected: s.inspected,
      allowed: s.allowed,
      dropped: { ...s.dropped },
      droppedBeforeParse: s.droppedBeforeParse,
      droppedByMethod: { ...s.droppedByMethod },
      droppedByTransport: { ...s.droppedByTransport },
      bansIssued: { ...s.bansIssued },
      bansActive: this.#bans.list(this.#clock.now()).length,
      bansLiftedByOperator: this.#bans.lifted,
      authFailures: s.authFailures,
      authSuccesses: s.authSuccesses,
      userLockouts: s.userLockouts,
      lockedOutRefusals: s.lockedOutRefusals,
      lockedUsers: this.#lockedUntil.size,
      trackedSources: this.#floods.size + this.#sourceFailures.size + (this.#scannerHits?.size ?? 0),
      trackedUsers: this.#userFailures.size,
      evictions:
        s.evictions +
        this.#floods.evicted +
        this.#sourceFailures.evicted +
        this.#userFailures.evicted +
        (this.#scannerHits?.evicted ?? 0) +
        this.#scannerCounts.evicted +
        this.#bans.evicted,
    };
  }

  /** Forgets idle counters, ended bans and ended lockouts (runs every `sweepSeconds`). */
  sweep(): void {
    const now = this.#clock.now();
    this.#floods.sweep(now);
    this.#scannerHits?.sweep(now);
    this.#sourceFailures.sweep(now);
    this.#userFailures.sweep(now);
    this.#bans.sweep(now);
    for (const [k, until] of this.#lockedUntil) if (now >= until) this.#lockedUntil.delete(k);
    this.#scannerCounts.deleteWhere((v) => now - v.last >= 3_600_000);
  }

  /**
   * Reconciles with the ban table: flushes hit counts, drops bans the operator lifted, takes in bans added
   * elsewhere. Runs every `pollSeconds`; call it once at start-up to load the bans that survived a restart.
   */
  syncBans(): Promise<void> {
    const now = this.#clock.now();
    return this.#bans.sync(now, now - this.settings.keepEndedBansSeconds * 1000);
  }

  /** Stops the timers and flushes pending ban writes and hit counts. Safe to call twice. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const t of this.#timers) t.cancel();
      await this.#bans.flushWrites();
      await this.syncBans();
    })();
    return this.#closed;
  }

  /** Resolves when queued ban writes are done (for tests and orderly shutdown). */
  flushBanWrites(): Promise<void> {
    return this.#bans.flushWrites();
  }

  #allow(): GateDecision {
    this.#stats.allowed++;
    return 'allow';
  }

  #drop(why: 'banned' | 'scanner' | 'flood', req: IncomingRequest): GateDecision {
    const s = this.#stats;
    s.dropped[why]++;
    const m = KNOWN_METHODS.has(req.method) ? req.method : 'other';
    s.droppedByMethod[m] = (s.droppedByMethod[m] ?? 0) + 1;
    const t = req.transport.toLowerCase();
    const tk = KNOWN_TRANSPORTS.has(t) ? t : 'other';
    s.droppedByTransport[tk] = (s.droppedByTransport[tk] ?? 0) + 1;
    return 'drop';
  }

  #refused(): true {
    this.#stats.lockedOutRefusals++;
    return true;
  }

  #ban(key: string, reason: BanReason, seconds: number, now: number): BanRecord {
    this.#stats.bansIssued[reason]++;
    return this.#bans.ban(key, reason, now, seconds);
  }

  #lock(uk: string, now: number): void {
    if (!this.#lockedUntil.has(uk)) {
      this.#stats.evictions += makeRoom(this.#lockedUntil, this.settings.limits.maxTrackedUsers);
    }
    this.#lockedUntil.set(uk, now + this.settings.auth.lockoutSeconds * 1000);
    this.#stats.userLockouts++;
    this.#log.warn({ user: uk.replace('\u0000', '/') }, 'end-user credential locked after repeated failures');
  }

  #countScanner(key: string, now: number): void {
    const c = this.#scannerCounts.get(key);
    if (c) {
      c.count++;
      c.last = now;
      return;
    }
    this.#scannerCounts.set(key, { count: 1, last: now });
  }
}

/** The counting windows of floods, scanner requests, and failed authentications per source and per user. */
function windowsOf(s: SecuritySettings): [RateWindows, RateWindows | undefined, RateWindows, RateWindows] {
  const maxKeys = s.limits.maxTrackedSources;
  return [
    new RateWindows({ limit: s.flood.maxRequests, windowMs: s.flood.windowSeconds * 1000, maxKeys }),
    // Scanner requests are counted for an hour; `banAfter` of them inside it bans the source.
    s.scanners.banAfter > 1
      ? new RateWindows({ limit: s.scanners.banAfter - 1, windowMs: 3_600_000, maxKeys })
      : undefined,
    new RateWindows({ limit: s.auth.maxFailuresPerSource, windowMs: s.auth.sourceWindowSeconds * 1000, maxKeys }),
    new RateWindows({
      limit: s.auth.maxFailuresPerUser,
      windowMs: s.auth.userWindowSeconds * 1000,
      maxKeys: s.limits.maxTrackedUsers,
    }),
  ];
}
