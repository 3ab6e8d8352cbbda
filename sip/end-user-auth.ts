/**
 * End-user authentication at the SIP edge, shared by the registrar's REGISTERs and the phones' INVITEs: a phone
 * proves it holds a phone token either as the digest password with the extension as username (RFC 3261 §22,
 * RFC 7616) or as `Authorization: Bearer <jwt>` (RFC 8898); failures count towards the security gate's lockout
 * and bans, and a right token that is revoked or expired is told 403 with AUTH.0401 (docs/softphones.md,
 * docs/security.md). REGISTER handling itself (RFC 3261 §10.3) is sip/registrar.ts.
 */
import { decodeJwt } from 'jose';
import { EventCodes, type EventCode } from '../events/index.js';
import { PhoneTokenRejectedError, verifyPhoneToken } from './phone-token.js';
import {
  accountIdOfSipLabel,
  phoneTokenIsValid,
  type Db,
  type PhoneCredentials,
  type PhoneTokenRow,
} from '../store/index.js';
import type { Logger } from '../config/index.js';
import type { EndUserIdentity } from './sip-app.js';
import type { SwitchNames } from './switch-names.js';
import type { SecurityGate } from './security/index.js';
import { dummySecret } from './security/index.js';
import { DigestServer, bearerChallenge, type Clock, type Responder, type SipRequest, type Uri } from './stack/index.js';
import { CHECKS_PER_TOKEN, PhoneCredentialStore, accountOfHost, realmOfHost } from './registrar-credentials.js';

/**
 * The address-of-record a request names: account (if the domain's first label is its uuid), the domain's first
 * label (an account's readable SIP domain label, resolved by EndUserAuth.accountOf) and extension.
 */
export interface Aor {
  accountId: string | undefined;
  label: string;
  realm: string;
  extension: string;
}

/** The token whose password the digest was made with, or why none. */
type Match = { row?: PhoneTokenRow; reason?: string };

export type AuthOutcome = { ok: true; identity: EndUserIdentity; token: PhoneTokenRow | undefined } | { ok: false };

export interface EndUserAuthSettings {
  /** Digest algorithms offered, one challenge each, most preferred first (RegistrarSettings.digestAlgorithms). */
  digestAlgorithms: Array<'SHA-256' | 'MD5'>;
  /** Refuse phones on unencrypted transports (UDP, TCP, WS) with 403. */
  requireEncryption: boolean;
}

export interface EndUserAuthOptions {
  db: Db;
  /** The server secret phone tokens are signed with (config `signUrlSecret`). */
  secret: string;
  clock: Clock;
  settings: EndUserAuthSettings;
  gate?: SecurityGate;
  /** The switch's own names: a digest-uri naming the switch, not the Request-URI, is accepted (RFC 3261 §22.4). */
  names?: SwitchNames;
  logger?: Logger;
  /** Where AUTH.0200 and AUTH.0401 go (the registrar records them, so its settled() waits for them). */
  report(accountId: string, code: EventCode, data: Record<string, unknown>): void;
}

const ENCRYPTED = new Set(['TLS', 'WSS']);

export class EndUserAuth {
  readonly #db: Db;
  readonly #secret: string;
  readonly #clock: Clock;
  readonly #settings: EndUserAuthSettings;
  readonly #gate?: SecurityGate;
  readonly #report: EndUserAuthOptions['report'];
  readonly #names?: SwitchNames;
  readonly #log?: Logger;
  readonly #credentials: PhoneCredentialStore;
  /** One DigestServer per realm and challenge kind (401 for REGISTER, 407 for INVITE); bounded. */
  readonly #digest = new Map<string, DigestServer>();

  constructor(opts: EndUserAuthOptions) {
    this.#db = opts.db;
    this.#secret = opts.secret;
    this.#clock = opts.clock;
    this.#settings = opts.settings;
    this.#gate = opts.gate;
    this.#report = opts.report;
    this.#names = opts.names;
    this.#log = opts.logger;
    this.#credentials = new PhoneCredentialStore(opts.db, opts.secret, opts.clock);
  }

  /**
   * The end-user authenticator for `SipApplication.useEndUserAuthentication`: INVITEs from phones. The identity
   * is the From URI's (`sip:<ext>@<account-uuid>`), or the Bearer token's. INVITEs are challenged with
   * 407 Proxy-Authenticate (RFC 3261 §22.3: the switch is the phone's outbound proxy; a 401 would suggest the
   * callee challenges), and phones answer with Proxy-Authorization. Null when it has answered (407 or 403).
   */
  async authenticateInvite(req: SipRequest, srv: Responder): Promise<EndUserIdentity | null> {
    const aor = aorOf(req.from?.uri);
    const out = await this.authenticate(req, srv, aor, true);
    if (!out.ok) return null;
    this.#report(out.identity.accountId, EventCodes.phoneAuthorized, {
      tokenId: out.identity.tokenId,
      endUserId: out.identity.endUserId,
      extension: out.identity.extension,
      method: req.method,
    });
    return out.identity;
  }

  /**
   * Authenticates `req` for `aor`: a REGISTER (`proxy` false: 401 / Authorization) or an INVITE (`proxy` true:
   * 407 / Proxy-Authorization). When it fails it has already answered (challenge, 400 or 403).
   */
  async authenticate(req: SipRequest, srv: Responder, aor: Aor | undefined, proxy: boolean): Promise<AuthOutcome> {
    if (this.#settings.requireEncryption && !ENCRYPTED.has(req.source?.transport ?? '')) {
      // sip.requireEncryption: signalling (and so the SDES keys in the SDP) must not cross the network in clear.
      srv.send(403, 'Forbidden', { headers: { Warning: '399 simu "encryption required: use TLS or WSS"' } });
      return { ok: false };
    }
    const bearer = bearerOf(req, proxy);
    if (bearer !== undefined) return this.#bearer(req, srv, bearer, aor, proxy);
    const digest = this.#digestServer(aor?.realm ?? 'simu', proxy);
    // A phone's first request carries no credentials: challenge without touching the store.
    if (!aor || !req.headers.has(proxy ? 'proxy-authorization' : 'authorization')) return challenge(srv, digest);
    // Without waiting when nothing is to be read (the domain names the account, the user's credentials are
    // remembered): a refresh, the common case, makes no promise here (each costs its hooks and a turn).
    const accountId = aor.accountId ?? (await this.accountOf(aor));
    // Locked out by account, whichever of its domains (uuid or label) the phone names.
    const who = { source: req.source?.address ?? '', account: accountId ?? aor.realm, user: aor.extension };
    const locked = this.#gate?.isLockedOut(who) ?? false;
    // The same queries for unknown accounts, unknown users and locked users (docs/security.md, no enumeration).
    let user =
      this.#credentials.recall(accountId, aor.extension, locked) ??
      (await this.#credentials.lookup(accountId, aor.extension, locked));
    let found = this.#match(req, digest, user);
    if (found instanceof Promise) found = await found;
    if (found.reason === 'wrong' && user.fromMemory) {
      // Nothing remembered matches: perhaps a token minted by another process since. The store once more.
      user = await this.#credentials.lookup(accountId, aor.extension, locked, true);
      found = await this.#match(req, digest, user);
    }
    const row = found.row;
    if (row && user.endUserId) {
      if (!phoneTokenIsValid(row, new Date(this.#clock.now()))) {
        this.#reject(srv, row, row.revoked_at ? 'revoked' : 'expired', req.method);
        return { ok: false };
      }
      if (!user.isActive) {
        srv.send(403, 'Forbidden');
        return { ok: false };
      }
      this.#gate?.authSucceeded(who);
      return { ok: true, token: row, identity: identityOf(row) };
    }
    if (found.reason === 'stale') return challenge(srv, digest, true); // a right digest over an old nonce (RFC 7616 §3.3)
    if (found.reason === 'uri-mismatch') {
      // RFC 3261 §22.4: credentials signed for another resource are a failed credential, and no password would
      // make them right, so 403 (a new challenge would only be answered with the same uri).
      this.#gate?.authFailed(who);
      this.#log?.info(
        { source: who.source, account: who.account, user: who.user, method: req.method },
        'digest uri names neither the Request-URI nor this switch',
      );
      srv.send(403, 'Forbidden', {
        headers: { Warning: '399 simu "digest uri names neither the Request-URI nor this switch"' },
      });
      return { ok: false };
    }
    // 'missing' (the first request of a phone) is not a failure; 'malformed' and 'wrong' are.
    if (found.reason === 'malformed' || found.reason === 'wrong') this.#gate?.authFailed(who);
    return challenge(srv, digest);
  }

  /** Forgets the credentials remembered (the registrar's sweep found a token that no longer authenticates). */
  forgetCredentials(): void {
    this.#credentials.forget();
  }

  /** An end-user registered until `untilMs`: its credentials stay remembered as long (PhoneCredentialStore.keep). */
  keepCredentials(accountId: string, extension: string, untilMs: number): void {
    this.#credentials.keep(accountId, extension, untilMs);
  }

  /** Tokens that authenticated phones from remembered credentials: the sweep checks they still work. */
  tokensInUse(): ReadonlySet<string> {
    return this.#credentials.tokensInUse();
  }

  /** Stops following the store's credential writes. */
  close(): void {
    this.#credentials.close();
  }

  /**
   * The token whose password the digest was made with, or why none: each of the user's tokens, as JWT and short
   * form, then the dummy secret (always 'wrong') up to one token's worth of checks, so an unknown extension costs
   * what the usual one-token end-user costs (docs/security.md: the same work for unknown users).
   */
  #match(req: SipRequest, digest: DigestServer, user: PhoneCredentials): Match | Promise<Match> {
    // The passwords of a token are made once (signing its claims); then they are known and nothing waits.
    const passwords: string[][] = [];
    for (const row of user.tokens) {
      const known = this.#credentials.known(row);
      if (!known) return this.#matchOnceSigned(req, digest, user);
      passwords.push(known);
    }
    return this.#matchKnown(req, digest, user, passwords);
  }

  async #matchOnceSigned(req: SipRequest, digest: DigestServer, user: PhoneCredentials): Promise<Match> {
    const passwords: string[][] = [];
    for (const row of user.tokens) passwords.push(await this.#credentials.candidates(row));
    return this.#matchKnown(req, digest, user, passwords);
  }

  /** #match with each token's passwords (`passwords[i]` are those of `user.tokens[i]`). */
  #matchKnown(req: SipRequest, digest: DigestServer, user: PhoneCredentials, passwords: string[][]): Match {
    // Read once (header, digest-uri, our nonce's tag) for every password tried.
    const attempt = digest.parse(req);
    if (!attempt.ok) return { reason: attempt.reason };
    let checks = 0;
    for (let i = 0; i < user.tokens.length; i++) {
      const row = user.tokens[i];
      for (const password of passwords[i]) {
        checks += 1;
        if (!digest.check(attempt, password)) continue;
        const v = digest.settle(attempt); // a right digest over a spent or expired nonce is only stale
        if (!v.ok) return { reason: v.reason };
        if (!user.endUserId) return { reason: 'wrong' };
        this.#credentials.matched(row, password);
        return { row };
      }
    }
    for (; checks < CHECKS_PER_TOKEN; checks++) digest.check(attempt, dummySecret());
    return { reason: 'wrong' };
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
    this.#report(accountId, EventCodes.phoneRejected, { tokenId, endUserId, extension, reason, method });
  }

  /**
   * The account an address-of-record's domain names: `<uuid>[.anything]` or `<label>[.anything]` where label is an
   * account's SIP domain label (store/sip-domains.ts, read through the per-process cache). Undefined when none.
   */
  async accountOf(aor: Aor): Promise<string | undefined> {
    return aor.accountId ?? (await accountIdOfSipLabel(this.#db, aor.label));
  }

  #digestServer(realm: string, proxy: boolean): DigestServer {
    const key = `${proxy ? 'p' : 'u'}:${realm}`;
    let s = this.#digest.get(key);
    if (!s) {
      // Bounded: realms come from the request, so a stranger could invent many. An evicted realm's nonces are
      // then 'wrong' and the phone is simply challenged again.
      if (this.#digest.size >= 10_000) this.#digest.delete(this.#digest.keys().next().value!);
      const names = this.#names;
      s = new DigestServer({
        realm,
        proxy,
        algorithms: this.#settings.digestAlgorithms,
        clock: this.#clock,
        namesServer: names ? (uri, req) => names.namesSwitch(uri, req) : undefined,
      });
      this.#digest.set(key, s);
    }
    return s;
  }
}

/** Answers with a digest challenge (401 or 407); `stale`: the digest was right, over an old nonce. */
function challenge(srv: Responder, digest: DigestServer, stale = false): AuthOutcome {
  srv.send(digest.status, undefined, { headers: digest.challenge({ stale }) });
  return { ok: false };
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

/** The address-of-record of a To (REGISTER) or From (INVITE) URI. */
export function aorOf(uri: Uri | undefined): Aor | undefined {
  if (!uri || (uri.scheme !== 'sip' && uri.scheme !== 'sips')) return undefined;
  const u = uri as { user?: string; host: string };
  if (!u.user) return undefined;
  let extension: string;
  try {
    extension = decodeURIComponent(u.user);
  } catch {
    return undefined;
  }
  const realm = realmOfHost(u.host);
  return { accountId: accountOfHost(u.host), label: realm, realm, extension };
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
