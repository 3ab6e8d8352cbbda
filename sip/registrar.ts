/**
 * The registrar (RFC 3261 §10.3) of the switch's SIP edge, and the authenticator of end-users' INVITEs.
 *
 * Each account is its own SIP domain: a phone's address-of-record is `sip:<extension>@<account-uuid>` (or
 * `<account-uuid>.<anything>`), and its credential is a phone token, either as the digest password with the
 * extension as username (RFC 3261 §22, RFC 7616) or as `Authorization: Bearer <jwt>` (RFC 8898). Bindings live
 * in the LocationService; `end_users.registration_state` follows them. See docs/softphones.md.
 */
import { decodeJwt } from 'jose';
import type { Logger } from '../config/index.js';
import { EventCodes, type EventCode } from '../events/index.js';
import { PhoneTokenRejectedError, verifyPhoneToken } from './phone-token.js';
import {
  liveRegistrations,
  phoneTokenIsValid,
  pruneRegistrations,
  replaceRegistrations,
  resetRegistrationStates,
  setRegistrationState,
  unusablePhoneTokenIds,
  type Db,
  type PhoneTokenRow,
  type RegistrationRow,
} from '../store/index.js';
import type { EndUserIdentity, SipApplication } from './sip-app.js';
import type { SecurityGate } from './security/index.js';
import { withDummySecret } from './security/index.js';
import {
  DigestServer,
  bearerChallenge,
  formatUri,
  parseNameAddr,
  systemClock,
  type Clock,
  type Responder,
  type SipRequest,
  type TimerHandle,
  type Uri,
} from './stack/index.js';
import { LocationService, type Binding } from './location.js';
import { CHECKS_PER_TOKEN, PhoneCredentialStore, accountOfHost, realmOfHost } from './registrar-credentials.js';

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
}

export const DEFAULT_REGISTRAR_SETTINGS: RegistrarSettings = {
  defaultExpires: 3600,
  minExpires: 60,
  maxExpires: 7200,
  sweepMs: 5000,
  digestAlgorithms: ['MD5'],
  requireEncryption: false,
  maxBindingsPerUser: 10,
};

const ENCRYPTED = new Set(['TLS', 'WSS']);

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

/** The address-of-record a request names: account (if the domain's first label is one) and extension. */
interface Aor {
  accountId: string | undefined;
  realm: string;
  extension: string;
}

type AuthOutcome = { ok: true; identity: EndUserIdentity; token: PhoneTokenRow | undefined } | { ok: false };

export class Registrar {
  readonly location: LocationService;
  readonly settings: RegistrarSettings;
  readonly #db: Db;
  readonly #secret: string;
  readonly #log: Logger;
  readonly #events?: PhoneEventSink;
  readonly #gate?: SecurityGate;
  readonly #clock: Clock;
  readonly #credentials: PhoneCredentialStore;
  /** One DigestServer per realm and challenge kind (401 for REGISTER, 407 for INVITE); bounded. */
  readonly #digest = new Map<string, DigestServer>();
  #sweepTimer?: TimerHandle;
  #closed = false;
  /** Writes in flight, so close() and tests can wait for them. */
  readonly #pending = new Set<Promise<unknown>>();
  /** The last registration_state write queued per end-user. */
  readonly #stateWrites = new Map<string, Promise<void>>();

  constructor(opts: RegistrarOptions) {
    this.#db = opts.db;
    this.#secret = opts.secret;
    this.#log = opts.logger;
    this.#events = opts.events;
    this.#gate = opts.gate;
    this.#clock = opts.clock ?? systemClock;
    this.location = opts.location ?? new LocationService({ clock: this.#clock });
    this.settings = { ...DEFAULT_REGISTRAR_SETTINGS, ...opts.settings };
    this.#credentials = new PhoneCredentialStore(opts.db, opts.secret);
    this.#gate?.setRegistrationLookup(this.location);
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
    for (const r of rows) this.location.apply(r.account_id, r.extension, [bindingOf(r)], [], max);
    await resetRegistrationStates(
      this.#db,
      rows.map((r) => r.end_user_id),
    );
    if (rows.length > 0) this.#log.info({ bindings: rows.length }, 'registrations restored');
    this.#scheduleSweep();
  }

  /** Stops the sweep and waits for state writes in flight. Safe twice. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweepTimer) this.#clock.clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    await this.settled();
  }

  /** Resolves when the store writes and events started so far are done. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
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
    const ids = this.location.tokenIds();
    if (ids.size === 0) return;
    let invalid: Set<string>;
    try {
      invalid = await unusablePhoneTokenIds(this.#db, ids, new Date(this.#clock.now()));
    } catch (err) {
      this.#log.warn({ err }, 'phone tokens of live bindings not checked');
      return;
    }
    if (invalid.size === 0) return;
    for (const u of this.location.dropTokens(invalid)) this.#syncState(u);
  }

  /**
   * The end-user authenticator for `SipApplication.useEndUserAuthentication`: INVITEs from phones. The identity
   * is the From URI's (`sip:<ext>@<account-uuid>`), or the Bearer token's. INVITEs are challenged with
   * 407 Proxy-Authenticate (RFC 3261 §22.3: the switch is the phone's outbound proxy; a 401 would suggest the
   * callee challenges), and phones answer with Proxy-Authorization. Null when it has answered (407 or 403).
   */
  async authenticateEndUser(req: SipRequest, srv: Responder): Promise<EndUserIdentity | null> {
    const aor = aorOf(req.from?.uri);
    const out = await this.#authenticate(req, srv, aor, true);
    if (!out.ok) return null;
    this.#emit(out.identity.accountId, EventCodes.phoneAuthorized, {
      tokenId: out.identity.tokenId,
      endUserId: out.identity.endUserId,
      extension: out.identity.extension,
      method: req.method,
    });
    return out.identity;
  }

  // ---- REGISTER (RFC 3261 §10.3) ----

  async #register(req: SipRequest, srv: Responder): Promise<void> {
    const aor = aorOf(req.to?.uri);
    if (!aor)
      return void srv.send(400, 'Bad Request', {
        headers: { Warning: '399 simu "To must be sip:<extension>@<account>"' },
      });
    const out = await this.#authenticate(req, srv, aor, false);
    if (!out.ok) return;
    const id = out.identity;
    // §10.3 step 3: the authenticated user must be allowed to change this address-of-record's bindings.
    if (id.accountId !== aor.accountId || id.extension !== aor.extension) return void srv.send(403, 'Forbidden');

    const now = this.#clock.now();
    const headerExpires = parseExpires(req.headers.get('expires'));
    const contacts = req.headers.getAll('contact').map((v) => v.trim());
    const callId = req.callId;
    const cseq = req.cseq.seq;

    if (contacts.length === 0) return void this.#ok(srv, id, now); // a query (§10.3 step 8)

    // §10.3 step 6: `*` only alone and with Expires: 0; it removes every binding (older Call-ID/CSeq aside).
    if (contacts.includes('*')) {
      if (contacts.length !== 1 || headerExpires !== 0) return void srv.send(400, 'Bad Request');
      const removed = this.location.removeAll(id.accountId, id.extension);
      if (removed.length > 0) this.#syncState(id);
      return void this.#ok(srv, id, now);
    }

    if (contacts.length > this.settings.maxBindingsPerUser) {
      return void srv.send(403, 'Forbidden', {
        headers: { Warning: `399 simu "at most ${this.settings.maxBindingsPerUser} contacts per extension"` },
      });
    }
    const upserts: Binding[] = [];
    const removals: string[] = [];
    for (const value of contacts) {
      const na = parseNameAddr(value);
      if (!na) return void srv.send(400, 'Bad Request');
      const contact = formatUri(na.uri);
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
      });
    }

    const max = this.settings.maxBindingsPerUser;
    const change = this.location.apply(id.accountId, id.extension, upserts, removals, max);
    if (change.current.length > 0) this.#syncState(id, new Date(now).toISOString());
    else if (change.removed.length > 0) this.#syncState(id);
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
    this.#ok(srv, id, now);
  }

  /** 200 OK listing every current binding with its remaining time (§10.3 step 8). */
  #ok(srv: Responder, id: EndUserIdentity, now: number): void {
    const contacts = this.location
      .lookup(id.accountId, id.extension)
      .map((b) => `<${b.contact}>;expires=${Math.max(0, Math.round((b.expiresAt - now) / 1000))}`);
    srv.send(200, 'OK', {
      headers: { ...(contacts.length > 0 ? { Contact: contacts } : {}), Date: new Date(now).toUTCString() },
    });
  }

  // ---- authentication, shared by REGISTER and INVITE ----

  async #authenticate(req: SipRequest, srv: Responder, aor: Aor | undefined, proxy: boolean): Promise<AuthOutcome> {
    if (this.settings.requireEncryption && !ENCRYPTED.has(req.source?.transport ?? '')) {
      // sip.requireEncryption: signalling (and so the SDES keys in the SDP) must not cross the network in clear.
      srv.send(403, 'Forbidden', { headers: { Warning: '399 simu "encryption required: use TLS or WSS"' } });
      return { ok: false };
    }
    const bearer = bearerOf(req, proxy);
    if (bearer !== undefined) return this.#bearer(req, srv, bearer, aor, proxy);
    const digest = this.#digestServer(aor?.realm ?? 'simu', proxy);
    const challenge = (stale = false): AuthOutcome => {
      srv.send(digest.status, undefined, { headers: digest.challenge({ stale }) });
      return { ok: false };
    };
    // A phone's first request carries no credentials: challenge without touching the store.
    if (!aor || !req.headers.has(proxy ? 'proxy-authorization' : 'authorization')) return challenge();
    const who = { source: req.source?.address ?? '', account: aor.accountId ?? aor.realm, user: aor.extension };
    const locked = this.#gate?.isLockedOut(who) ?? false;
    // The same queries for unknown accounts, unknown users and locked users (docs/security.md, no enumeration).
    const user = await this.#credentials.endUser(aor.accountId, aor.extension);
    const rows = await this.#credentials.tokensOf(locked ? undefined : user);
    const tries: Array<{ row: PhoneTokenRow | undefined; password: string | undefined }> = [];
    for (const row of rows) for (const c of await this.#credentials.candidates(row)) tries.push({ row, password: c });
    // Padded with the dummy secret (always 'wrong') to one token's worth of checks, so an unknown extension costs
    // what the usual one-token end-user costs (docs/security.md: the same work for unknown users).
    while (tries.length < CHECKS_PER_TOKEN) tries.push({ row: undefined, password: undefined });

    for (const t of tries) {
      const v = await digest.verify(
        req,
        withDummySecret(() => t.password),
      );
      if (v.ok && t.row && user) {
        const row = t.row;
        if (!phoneTokenIsValid(row, new Date(this.#clock.now()))) {
          this.#reject(srv, row, row.revoked_at ? 'revoked' : 'expired', req.method);
          return { ok: false };
        }
        if (!user.is_active) {
          srv.send(403, 'Forbidden');
          return { ok: false };
        }
        this.#gate?.authSucceeded(who);
        return { ok: true, token: row, identity: identityOf(row) };
      }
      if (v.ok) break; // cannot happen: nothing matches the dummy secret
      if (v.reason === 'stale') return challenge(true); // a right digest over an old nonce (RFC 7616 §3.3)
      if (v.reason === 'uri-mismatch') {
        // RFC 2617 §3.2.2.5: credentials for another Request-URI are a bad request (and a failed attempt).
        this.#gate?.authFailed(who);
        srv.send(400, 'Bad Request', { headers: { Warning: '399 simu "digest uri does not match the Request-URI"' } });
        return { ok: false };
      }
      if (v.reason !== 'wrong') {
        // 'missing' (the first request of a phone) is not a failure; 'malformed' is.
        if (v.reason === 'malformed') this.#gate?.authFailed(who);
        return challenge();
      }
    }
    this.#gate?.authFailed(who);
    return challenge();
  }

  async #bearer(
    req: SipRequest,
    srv: Responder,
    token: string,
    aor: Aor | undefined,
    proxy: boolean,
  ): Promise<AuthOutcome> {
    const realm = aor?.realm ?? 'simu';
    try {
      const claims = await verifyPhoneToken(this.#db, this.#secret, token, new Date(this.#clock.now()));
      this.#gate?.authSucceeded({
        source: req.source?.address ?? '',
        account: claims.accountId,
        user: claims.extension,
      });
      return {
        ok: true,
        token: undefined,
        identity: {
          accountId: claims.accountId,
          endUserId: claims.endUserId,
          extension: claims.extension,
          tokenId: claims.tokenId,
          maxConcurrent: claims.maxConcurrent,
        },
      };
    } catch (e) {
      if (!(e instanceof PhoneTokenRejectedError)) throw e;
      if (e.reason === 'expired' || e.reason === 'revoked') {
        // The signature was checked before the expiry and the stored row (verifyPhoneToken), so these claims
        // are ours and name the account to tell.
        const c = decodeJwt(token);
        this.#rejectClaims(srv, String(c.acc), String(c.jti), String(c.sub), String(c.ext), e.reason, req.method);
        return { ok: false };
      }
      if (e.reason === 'end_user_inactive') {
        srv.send(403, 'Forbidden');
        return { ok: false };
      }
      this.#gate?.authFailed({
        source: req.source?.address ?? '',
        account: aor?.accountId ?? realm,
        user: aor?.extension,
      });
      // RFC 8898 §3.1 / RFC 6750 §3.1: an invalid token is told so in the challenge.
      const value = `${bearerChallenge(realm)}, error="invalid_token"`;
      srv.send(proxy ? 407 : 401, undefined, {
        headers: { [proxy ? 'Proxy-Authenticate' : 'WWW-Authenticate']: value },
      });
      return { ok: false };
    }
  }

  /** 403 and AUTH.0401 for a token that was right but is revoked or expired (spec: Phone token valid → Revoke). */
  #reject(srv: Responder, row: PhoneTokenRow, reason: string, method: string): void {
    this.#rejectClaims(srv, row.account_id, row.id, row.end_user_id, row.extension_number, reason, method);
  }

  #rejectClaims(
    srv: Responder,
    accountId: string,
    tokenId: string,
    endUserId: string,
    extension: string,
    reason: string,
    method: string,
  ): void {
    srv.send(403, 'Forbidden', { headers: { Warning: `399 simu "phone token ${reason}"` } });
    this.#emit(accountId, EventCodes.phoneRejected, { tokenId, endUserId, extension, reason, method });
  }

  #digestServer(realm: string, proxy: boolean): DigestServer {
    const key = `${proxy ? 'p' : 'u'}:${realm}`;
    let s = this.#digest.get(key);
    if (!s) {
      // Bounded: realms come from the request, so a stranger could invent many. An evicted realm's nonces are
      // then 'wrong' and the phone is simply challenged again.
      if (this.#digest.size >= 10_000) this.#digest.delete(this.#digest.keys().next().value!);
      s = new DigestServer({ realm, proxy, algorithms: this.settings.digestAlgorithms, now: () => this.#clock.now() });
      this.#digest.set(key, s);
    }
    return s;
  }

  #emit(accountId: string, code: EventCode, data: Record<string, unknown>): void {
    if (!this.#events) return;
    this.#track(
      this.#events
        .emit({ accountId, code, data })
        .catch((err: unknown) => this.#log.warn({ err, code }, 'phone event not recorded')),
    );
  }

  /**
   * Writes the end-user's registration_state as the location service has it when the write runs, one write at a
   * time per end-user: a sweep's 'unregistered' and a new REGISTER's 'registered' can then never land out of order
   * (a PostgreSQL pool would otherwise run them on two connections).
   */
  #syncState(u: { endUserId: string; accountId: string; extension: string }, registeredAt?: string): void {
    const previous = this.#stateWrites.get(u.endUserId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const state = this.location.isRegistered(u.accountId, u.extension) ? 'registered' : 'unregistered';
      // UDP bindings are kept across restarts (store/registrations.ts); stream ones die with their connection.
      const kept = this.location
        .lookup(u.accountId, u.extension)
        .filter((b) => b.transport === 'UDP' && b.endUserId === u.endUserId)
        .map(rowOf);
      try {
        await setRegistrationState(this.#db, u.endUserId, state, registeredAt);
        await replaceRegistrations(this.#db, u.endUserId, kept);
      } catch (err) {
        this.#log.warn({ err, endUserId: u.endUserId }, 'registration state not written');
      }
    });
    this.#stateWrites.set(u.endUserId, next);
    void next.finally(() => {
      if (this.#stateWrites.get(u.endUserId) === next) this.#stateWrites.delete(u.endUserId);
    });
    this.#track(next);
  }

  #track(p: Promise<unknown>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }
}

function rowOf(b: Binding): RegistrationRow {
  return {
    end_user_id: b.endUserId,
    contact: b.contact,
    account_id: b.accountId,
    extension: b.extension,
    source_address: b.sourceAddress,
    source_port: b.sourcePort,
    flow_id: b.flowId,
    token_id: b.tokenId,
    call_id: b.callId,
    cseq: b.cseq,
    registered_at: b.registeredAt,
    expires_at: b.expiresAt,
  };
}

function bindingOf(r: RegistrationRow): Binding {
  return {
    accountId: r.account_id,
    endUserId: r.end_user_id,
    extension: r.extension,
    contact: r.contact,
    transport: 'UDP',
    sourceAddress: r.source_address,
    sourcePort: r.source_port,
    flowId: r.flow_id,
    expiresAt: r.expires_at,
    registeredAt: r.registered_at,
    tokenId: r.token_id,
    callId: r.call_id,
    cseq: r.cseq,
  };
}

function identityOf(row: PhoneTokenRow): EndUserIdentity {
  return {
    accountId: row.account_id,
    endUserId: row.end_user_id,
    extension: row.extension_number,
    tokenId: row.id,
    maxConcurrent: row.max_concurrent,
  };
}

function aorOf(uri: Uri | undefined): Aor | undefined {
  if (!uri || (uri.scheme !== 'sip' && uri.scheme !== 'sips')) return undefined;
  const u = uri as { user?: string; host: string };
  if (!u.user) return undefined;
  let extension: string;
  try {
    extension = decodeURIComponent(u.user);
  } catch {
    return undefined;
  }
  return { accountId: accountOfHost(u.host), realm: realmOfHost(u.host), extension };
}

function parseExpires(v: string | undefined | null): number | undefined {
  if (v === undefined || v === null) return undefined;
  const t = v.trim();
  if (!/^\d{1,10}$/.test(t)) return undefined;
  return Number(t);
}

/** `Authorization: Bearer` (REGISTER) or, for INVITE, `Proxy-Authorization: Bearer` as well (RFC 8898 §2.2). */
function bearerOf(req: SipRequest, proxy: boolean): string | undefined {
  const names = proxy ? ['proxy-authorization', 'authorization'] : ['authorization'];
  for (const n of names) {
    for (const v of req.headers.getAll(n)) {
      const m = /^\s*Bearer\s+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(v);
      if (m) return m[1];
    }
  }
  return undefined;
}
