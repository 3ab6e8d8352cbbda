/**
 * The registrar (RFC 3261 §10.3) of the switch's SIP edge. Authenticating the phone (digest or Bearer, lockout)
 * is sip/end-user-auth.ts, shared with the INVITEs of phones, which the registrar wires into the SIP application.
 *
 * Each account is its own SIP domain: a phone's address-of-record is `sip:<extension>@<label>.<sip.domain>` (the
 * account's readable label, store/sip-domains.ts) or `sip:<extension>@<account-uuid>[.<anything>]`, and its credential is a phone token, either as the digest password with the
 * extension as username (RFC 3261 §22, RFC 7616) or as `Authorization: Bearer <jwt>` (RFC 8898). Bindings live
 * in the LocationService; `end_users.registration_state` follows them. See docs/softphones.md.
 */
import type { Logger } from '../config/index.js';
import { detached } from '../kit/index.js';
import { EventCodes, type EventCode } from '../events/index.js';
import {
  liveRegistrations,
  pruneRegistrations,
  resetRegistrationStates,
  unusablePhoneTokenIds,
  type Db,
} from '../store/index.js';
import type { EndUserIdentity, SipApplication } from './sip-app.js';
import type { SecurityGate } from './security/index.js';
import {
  formatUri,
  parseNameAddr,
  systemClock,
  type Clock,
  type Responder,
  type SipRequest,
  type TimerHandle,
} from './stack/index.js';
import { LocationService, type Binding } from './location.js';
import { SipFront } from './front.js';
import { EndUserAuth, aorOf } from './end-user-auth.js';
import { RegistrationWriter, bindingOf, type RegisteredUser } from './registration-writer.js';
import { NatKeepAlive } from './nat/keep-alive.js';
import { outboundHeaders, registersOutbound } from './nat/outbound.js';

/** Where AUTH.0200 / AUTH.0401 go: the events room's EventPublisher fits. */
export interface PhoneEventSink {
  emit(input: { accountId: string; code: EventCode; data?: Record<string, unknown> }): Promise<unknown>;
}

export interface RegistrarSettings {
  /** Expiry granted when the phone asks for none (RFC 3261 §10.2.1.1). */
  defaultExpires: number;
  /** Shorter requests get 423 Interval Too Brief with Min-Expires (§10.3 step 7). */
  minExpires: number;
  /** Longer requests are granted this (§10.3 step 7: the registrar may shorten). */
  maxExpires: number;
  /** How often expired bindings are swept. */
  sweepMs: number;
  /**
   * Digest algorithms offered, one challenge each, most preferred first (RFC 8760 §2.4). Default MD5 alone:
   * baresip 1.0.0 (Debian 12) gives up on the whole challenge when any of it names SHA-256 (tried here: "Register:
   * Function not implemented" with SHA-256 first or second), and SIPp 3.6 reads only the first challenge. MD5
   * costs nothing here: the password is a phone token (256-bit HMAC), which no one can guess from a digest.
   * Offer `['SHA-256', 'MD5']` when every phone in use understands it (docs/softphones.md).
   */
  digestAlgorithms: Array<'SHA-256' | 'MD5'>;
  /** Refuse phones on unencrypted transports (UDP, TCP, WS) with 403: signalling must be TLS or WSS. */
  requireEncryption: boolean;
  /**
   * Contacts one address-of-record may hold. A REGISTER that would go beyond it is accepted and the bindings that
   * expire soonest (refreshed least recently: most likely a phone that went away) are dropped to make room; one
   * REGISTER naming more contacts than this gets 403.
   */
  maxBindingsPerUser: number;
  /**
   * How long a refresh that only moves a binding's expiry may wait before it is written to the store, grouped
   * with others (sip/registration-writer.ts); any other change is written at once.
   */
  refreshWriteDelayMs: number;
  /**
   * Interval of the keep-alives sent to phones registered over UDP (sip/nat/keep-alive.ts), seconds; 0: none (the
   * switch passes `sip.keepAliveSeconds`). Also the Flow-Timer told to RFC 5626 outbound phones.
   */
  keepAliveSeconds: number;
  /** Keep-alives in a row left unanswered before a UDP binding is dropped as a dead flow. */
  keepAliveMisses: number;
}

export const DEFAULT_REGISTRAR_SETTINGS: RegistrarSettings = {
  defaultExpires: 3600,
  minExpires: 60,
  maxExpires: 7200,
  sweepMs: 5000,
  digestAlgorithms: ['MD5'],
  requireEncryption: false,
  maxBindingsPerUser: 10,
  refreshWriteDelayMs: 1000,
  keepAliveSeconds: 0,
  keepAliveMisses: 3,
};

export interface RegistrarOptions {
  app: SipApplication;
  db: Db;
  /** The server secret phone tokens are signed with (config `signUrlSecret`). */
  secret: string;
  logger: Logger;
  events?: PhoneEventSink;
  gate?: SecurityGate;
  clock?: Clock;
  location?: LocationService;
  settings?: Partial<RegistrarSettings>;
}

export class Registrar {
  readonly location: LocationService;
  readonly settings: RegistrarSettings;
  readonly #db: Db;
  readonly #log: Logger;
  readonly #events?: PhoneEventSink;
  readonly #clock: Clock;
  readonly #auth: EndUserAuth;
  readonly #front: SipFront;
  #sweepTimer?: TimerHandle;
  #closed = false;
  /** Events and checks in flight, so close() and tests can wait for them. */
  readonly #pending = new Set<Promise<unknown>>();
  readonly #writer: RegistrationWriter;
  /** Keep-alives to UDP phones behind NAT, and dead-flow detection (sip/nat/keep-alive.ts). */
  readonly nat: NatKeepAlive;

  constructor(opts: RegistrarOptions) {
    this.#db = opts.db;
    this.#log = opts.logger;
    this.#events = opts.events;
    this.#clock = opts.clock ?? systemClock;
    this.#front = opts.app.front ?? new SipFront([]);
    this.location = opts.location ?? new LocationService({ clock: this.#clock });
    this.settings = { ...DEFAULT_REGISTRAR_SETTINGS, ...opts.settings };
    this.#writer = new RegistrationWriter({
      db: opts.db,
      location: this.location,
      clock: this.#clock,
      logger: opts.logger,
      refreshDelayMs: this.settings.refreshWriteDelayMs,
    });
    this.#auth = new EndUserAuth({
      db: opts.db,
      secret: opts.secret,
      clock: this.#clock,
      settings: this.settings,
      gate: opts.gate,
      names: opts.app.names,
      logger: opts.logger,
      report: (accountId, code, data) => this.#emit(accountId, code, data),
    });
    this.nat = new NatKeepAlive({
      ua: opts.app.ua,
      location: this.location,
      clock: this.#clock,
      logger: opts.logger,
      settings: { intervalMs: this.settings.keepAliveSeconds * 1000, misses: this.settings.keepAliveMisses },
      onDropped: (emptied) => {
        for (const u of emptied) this.#syncState(u);
      },
    });
    opts.gate?.setRegistrationLookup(this.location);
    opts.app.ua.onRequest('REGISTER', (req, srv) => this.#register(req, srv));
    opts.app.ua.onFlowClosed((flowId) => {
      if (!this.#closed) for (const u of this.location.dropFlow(flowId)) this.#syncState(u);
    });
    opts.app.useEndUserAuthentication((req, srv) => this.authenticateEndUser(req, srv));
  }

  /**
   * Restores the UDP registrations kept from before a restart (still live, token valid, end-user active), marks
   * every other end-user unregistered, and starts the sweep. Call once at start-up, before listening.
   */
  async start(): Promise<void> {
    const rows = await liveRegistrations(this.#db, this.#clock.now());
    await pruneRegistrations(this.#db, rows);
    const max = this.settings.maxBindingsPerUser;
    for (const r of rows) {
      const b = bindingOf(r);
      this.location.apply(r.account_id, r.extension, [b], [], max);
      this.nat.track(b);
    }
    await resetRegistrationStates(
      this.#db,
      rows.map((r) => r.end_user_id),
    );
    if (rows.length > 0) this.#log.info({ bindings: rows.length }, 'registrations restored');
    this.#scheduleSweep();
    this.nat.start();
  }

  /** Stops the sweep and writes what is pending (refreshes waiting to be grouped too). Safe twice. */
  async close(): Promise<void> {
    this.#closed = true;
    this.nat.close();
    this.#auth.close();
    if (this.#sweepTimer) this.#clock.clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    await this.settled();
    await this.#writer.close();
  }

  /** Resolves when the store writes (refreshes waiting to be grouped included) and events started so far are done. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    await this.#writer.settled();
  }

  #scheduleSweep(): void {
    if (this.#closed) return;
    this.#sweepTimer = this.#clock.setTimeout(() => {
      this.sweep();
      this.#scheduleSweep();
    }, this.settings.sweepMs);
  }

  /**
   * Forgets expired bindings, and bindings whose phone token was revoked or has expired or whose end-user was
   * disabled (by the API or by another process: at most one sweep later, calls stop reaching that phone), and
   * writes 'unregistered' for end-users left with none.
   */
  sweep(): void {
    for (const u of this.location.sweep()) this.#syncState(u);
    this.#track(this.#dropInvalidTokens());
  }

  async #dropInvalidTokens(): Promise<void> {
    // The tokens of live bindings, and every token that authenticated from remembered credentials (a phone may
    // hold no binding and still be remembered: unregistered, or INVITEs only).
    const ids = this.location.tokenIds();
    for (const id of this.#auth.tokensInUse()) ids.add(id);
    if (ids.size === 0) return;
    let invalid: Set<string>;
    try {
      invalid = await unusablePhoneTokenIds(this.#db, ids, new Date(this.#clock.now()));
    } catch (err) {
      this.#log.warn({ err }, 'phone tokens of live bindings not checked');
      return;
    }
    if (invalid.size === 0) return;
    this.#auth.forgetCredentials(); // perhaps revoked by another process: the next REGISTER reads the store
    for (const u of this.location.dropTokens(invalid)) this.#syncState(u);
  }

  /** INVITEs from phones (sip/end-user-auth.ts), for `SipApplication.useEndUserAuthentication`. */
  authenticateEndUser(req: SipRequest, srv: Responder): Promise<EndUserIdentity | null> {
    return this.#auth.authenticateInvite(req, srv);
  }

  // ---- REGISTER (RFC 3261 §10.3) ----

  async #register(req: SipRequest, srv: Responder): Promise<void> {
    const aor = aorOf(req.to?.uri);
    if (!aor)
      return void srv.send(400, 'Bad Request', {
        headers: { Warning: '399 simu "To must be sip:<extension>@<account>"' },
      });
    const out = await this.#auth.authenticate(req, srv, aor, false);
    if (!out.ok) return;
    const id = out.identity;
    // §10.3 step 3: the authenticated user must be allowed to change this address-of-record's bindings.
    const aorAccount = aor.accountId ?? (await this.#auth.accountOf(aor));
    if (id.accountId !== aorAccount || id.extension !== aor.extension) return void srv.send(403, 'Forbidden');

    const now = this.#clock.now();
    const headerExpires = parseExpires(req.headers.get('expires'));
    const contacts = req.headers.getAll('contact').map((v) => v.trim());
    const callId = detached(req.callId);
    const cseq = req.cseq.seq;

    if (contacts.length === 0) return void this.#ok(srv, id, now, false); // a query (§10.3 step 8)

    // §10.3 step 6: `*` only alone and with Expires: 0; it removes every binding (older Call-ID/CSeq aside).
    if (contacts.includes('*')) {
      if (contacts.length !== 1 || headerExpires !== 0) return void srv.send(400, 'Bad Request');
      const removed = this.location.removeAll(id.accountId, id.extension);
      if (removed.length > 0) this.#syncState(id);
      return void this.#ok(srv, id, now, false);
    }

    if (contacts.length > this.settings.maxBindingsPerUser) {
      return void srv.send(403, 'Forbidden', {
        headers: { Warning: `399 simu "at most ${this.settings.maxBindingsPerUser} contacts per extension"` },
      });
    }
    const upserts: Binding[] = [];
    const removals: string[] = [];
    // RFC 3327 §5.3: through a trusted front the Path is kept as the route to the phone; from anyone else, ignored.
    const path = this.#front.pathOf(req);
    let outbound = false;
    // Whether only expiries move (a refresh of the same contacts from the same place): then the write can wait.
    let onlyExpiries = true;
    for (const value of contacts) {
      const na = parseNameAddr(value);
      if (!na) return void srv.send(400, 'Bad Request');
      // Copies (kit detached): pieces of the request would keep its whole text alive with the binding.
      const contact = detached(formatUri(na.uri));
      const asked = parseExpires(na.params.get('expires') ?? undefined) ?? headerExpires;
      const existing = this.location.get(id.accountId, id.extension, contact);
      // §10.3 step 7: the same Call-ID with a CSeq not higher is an old or replayed request.
      if (existing && existing.callId === callId && cseq <= existing.cseq && existing.expiresAt > now) {
        return void srv.send(500, 'Server Internal Error', { headers: { 'Retry-After': '1' } });
      }
      if (asked === 0) {
        removals.push(contact);
        continue;
      }
      const seconds = asked ?? this.settings.defaultExpires;
      if (seconds < this.settings.minExpires) {
        return void srv.send(423, 'Interval Too Brief', {
          headers: { 'Min-Expires': String(this.settings.minExpires) },
        });
      }
      const src = req.source;
      if (!sameReach(existing, now, src, id.tokenId, path)) onlyExpiries = false;
      else this.nat.heard(existing!);
      const ob = registersOutbound(req, na);
      outbound ||= ob;
      upserts.push({
        accountId: id.accountId,
        endUserId: id.endUserId,
        extension: id.extension,
        contact,
        transport: src?.transport ?? 'UDP',
        sourceAddress: src?.address ?? '',
        sourcePort: src?.port ?? 0,
        flowId: src?.flowId ?? '',
        expiresAt: now + Math.min(seconds, this.settings.maxExpires) * 1000,
        registeredAt: now,
        tokenId: id.tokenId,
        callId,
        cseq,
        ...(ob && { outbound: true }),
        ...(path.length > 0 && { path }),
      });
    }

    const max = this.settings.maxBindingsPerUser;
    const change = this.location.apply(id.accountId, id.extension, upserts, removals, max);
    for (const b of upserts) this.nat.track(b);
    const urgent = !onlyExpiries || removals.length > 0 || change.added.length > 0 || change.removed.length > 0;
    if (change.current.length > 0) {
      this.#syncState(id, new Date(now).toISOString(), urgent);
      // Its refreshes need no store read while it stays registered (revocations: see #dropInvalidTokens).
      this.#auth.keepCredentials(id.accountId, id.extension, Math.max(...change.current.map((b) => b.expiresAt)));
    } else if (change.removed.length > 0) this.#syncState(id);
    // AUTH.0200 once per new binding, not on each refresh: a phone refreshing every few minutes would
    // otherwise flood the account's status callbacks (docs/softphones.md).
    if (change.added.length > 0) {
      this.#emit(id.accountId, EventCodes.phoneAuthorized, {
        tokenId: id.tokenId,
        endUserId: id.endUserId,
        extension: id.extension,
        method: 'REGISTER',
        contacts: change.added.map((b) => b.contact),
      });
    }
    this.#ok(srv, id, now, outbound, path);
  }

  /**
   * 200 OK listing every current binding with its remaining time (§10.3 step 8); to an RFC 5626 outbound
   * registration, `Require: outbound` and the keep-alive interval as `Flow-Timer` (§6, §4.4).
   */
  #ok(srv: Responder, id: EndUserIdentity, now: number, outbound: boolean, path: string[] = []): void {
    const contacts = this.location
      .lookup(id.accountId, id.extension)
      .map((b) => `<${b.contact}>;expires=${Math.max(0, Math.round((b.expiresAt - now) / 1000))}`);
    srv.send(200, 'OK', {
      headers: {
        ...(contacts.length > 0 ? { Contact: contacts } : {}),
        Date: new Date(now).toUTCString(),
        ...(outbound ? outboundHeaders(this.settings.keepAliveSeconds) : {}),
        // RFC 3327 §5.3: the Path stored is returned, so the phone (and the front) see the route kept.
        ...(path.length > 0 ? { Path: path } : {}),
      },
    });
  }

  #emit(accountId: string, code: EventCode, data: Record<string, unknown>): void {
    if (!this.#events) return;
    this.#track(
      this.#events
        .emit({ accountId, code, data })
        .catch((err: unknown) => this.#log.warn({ err, code }, 'phone event not recorded')),
    );
  }

  /** The end-user's registration changed: written at once, or grouped with others if `urgent` is false. */
  #syncState(u: RegisteredUser, registeredAt?: string, urgent = true): void {
    this.#writer.mark(u, { registeredAt, urgent });
  }

  #track(p: Promise<unknown>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }
}

/** Whether a live binding is reached where the REGISTER came from, with the same token (only its expiry moves). */
function sameReach(
  b: Binding | undefined,
  now: number,
  src: SipRequest['source'],
  tokenId: string,
  path: string[],
): boolean {
  return (
    b !== undefined &&
    samePath(b.path ?? [], path) &&
    b.expiresAt > now &&
    b.tokenId === tokenId &&
    b.transport === (src?.transport ?? 'UDP') &&
    b.sourceAddress === (src?.address ?? '') &&
    b.sourcePort === (src?.port ?? 0) &&
    b.flowId === (src?.flowId ?? '')
  );
}

function samePath(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function parseExpires(v: string | undefined | null): number | undefined {
  if (v === undefined || v === null) return undefined;
  const t = v.trim();
  if (!/^\d{1,10}$/.test(t)) return undefined;
  return Number(t);
}
