import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Context, Middleware, Next } from 'koa';
import type { Config } from '../config/index.js';
import {
  enableWebhookRoute,
  findAccount,
  findCall,
  findNumberOf,
  insertApiKey,
  listCallEvents,
  listWebhookRoutes,
  revokeApiKey,
  revokeApiKeysNamed,
  type Db,
} from '../store/index.js';
import {
  apiKeyOut,
  checkPassword,
  dummyPasswordHash,
  findPortalUserByEmail,
  RequestRateLimiter,
  spendTotp,
} from '../api/index.js';
import { loosePath, sourceKey } from './request-keys.js';
import { portalReads } from './portal-reads.js';
// The portal's errors are the web room's (status, stable code, message).
import { WebError as PortalError, readJsonBody as readJson, sendStatic, confined, vendorFile } from './web-kit.js';
import { systemClock, type Clock } from '../kit/index.js';

/**
 * The account portal on the API's HTTP server: static pages under /portal/, sign-in under /portal/api/, and
 * /portal/proxy/api/* forwarded to the REST API as the signed-in account.
 *
 * Security reasoning (docs/webrtc.md has the operator-facing part):
 * - Sign-in needs email, password (scrypt) and a fresh TOTP code; a code is spent once (replay refused).
 * - The session id is a 256-bit random value in an HttpOnly, SameSite=Strict cookie; the browser never sees an
 *   API key. Each session mints its own API key (named `portal-session`), held only in this process's memory and
 *   revoked at sign-out or expiry, so the REST API's own authentication, account status checks and rate limits
 *   apply to portal requests unchanged (no second authorization path to get wrong).
 * - Proxied requests (all methods: GET /api/calls/hangup changes state) and the portal's own state-changing ones must
 *   carry `X-Simu-Portal: 1`: a cross-site form or image cannot set that header and a cross-site fetch with it needs
 *   a CORS preflight this server never grants (defence in depth next to SameSite).
 * - Sessions end after 8 h idle or 12 h in all; sign-in attempts are limited per source address before any scrypt.
 * - POST /api/keys/create is not reachable through the proxy: in the portal a key needs a fresh one-time code
 *   (spec, Authentication 4), via POST /portal/api/keys/create.
 */
export interface PortalDeps {
  db: Db;
  /** Where the charts read (on SQLite a read pool: the store's one connection stays free for calls). */
  readDb?: Db;
  /** For the softphone's SIP WebSocket address and, with an https publicBaseUrl, `Secure` cookies. */
  config?: Config;
  /** True when the portal is served over https (the cookie gets `Secure`); defaults from config.publicBaseUrl. */
  secureCookies?: boolean;
  clock?: Pick<Clock, 'now'>;
  /** Idle session lifetime. */
  sessionIdleMs?: number;
  /** Absolute session lifetime, however active the session is. */
  sessionMaxMs?: number;
  /** Sign-in attempts per source address: at once, and then per minute. */
  signInBurst?: number;
  signInPerMinute?: number;
}

interface Session {
  userId: string;
  accountId: string;
  email: string;
  apiKey: string;
  apiKeyId: string;
  createdAt: number;
  lastSeen: number;
}

export const SESSION_COOKIE = 'simu_portal';
/** The name of the API key each portal session runs under (hidden on the portal's key page). */
export const SESSION_KEY_NAME = 'portal-session';
const STATIC_DIR = path.join(import.meta.dirname, 'static');
/** Failed sign-ins per email before a lockout, and its length. */
const MAX_FAILURES = 5;
const LOCKOUT_MS = 15 * 60_000;

export class Portal {
  readonly #sessions = new Map<string, Session>();
  readonly #failures = new Map<string, { count: number; until: number }>();
  readonly #clock: Pick<Clock, 'now'>;
  readonly #idleMs: number;
  readonly #maxMs: number;
  /** Sign-in attempts per source address (IPv6: per /64), taken before any password hashing. */
  readonly #signInLimiter: RequestRateLimiter;

  readonly #sweep: NodeJS.Timeout;
  /** Session keys left active by a previous process (sessions live in memory) are revoked once at start. */
  readonly ready: Promise<void>;

  constructor(private readonly deps: PortalDeps) {
    this.#clock = deps.clock ?? systemClock;
    this.#idleMs = deps.sessionIdleMs ?? 8 * 3600_000;
    this.#maxMs = deps.sessionMaxMs ?? 12 * 3600_000;
    this.#signInLimiter = new RequestRateLimiter({
      ratePerSecond: (deps.signInPerMinute ?? 10) / 60,
      burst: deps.signInBurst ?? 10,
      clock: this.#clock,
    });
    this.ready = revokeApiKeysNamed(deps.db, SESSION_KEY_NAME, new Date(this.#clock.now()).toISOString()).then(
      () => undefined,
      () => undefined,
    );
    // Idle sessions end (and their keys are revoked) even if their browser never comes back.
    this.#sweep = setInterval(() => {
      const now = this.#clock.now();
      for (const [sid, s] of this.#sessions) if (this.#expired(s, now)) void this.#end(sid);
    }, 60_000);
    this.#sweep.unref();
  }

  /** Koa middleware; mount it before the API's bearer authentication. */
  middleware(): Middleware {
    return async (ctx, next) => {
      const p = ctx.path;
      if (p === '/' && ctx.method === 'GET') return ctx.redirect('/portal/');
      if (p.startsWith('/portal/proxy/api/') || p === '/portal/proxy/api') return this.#proxy(ctx, next);
      if (p.startsWith('/portal/api/')) {
        try {
          return await this.#api(ctx);
        } catch (e) {
          if (!(e instanceof PortalError)) throw e;
          ctx.status = e.status;
          ctx.body = { detail: e.message, code: e.code };
          return;
        }
      }
      if (p === '/portal' || p.startsWith('/portal/')) return this.#static(ctx);
      return next();
    };
  }

  /** Revokes every session key (switch shutdown). */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    for (const [sid] of this.#sessions) await this.#end(sid);
  }

  async #static(ctx: Context): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return void (ctx.status = 405);
    let rel = ctx.path.replace(/^\/portal\/?/, '');
    if (rel.startsWith('vendor/')) {
      const file = vendorFile(rel.slice('vendor/'.length));
      return file ? sendStatic(ctx, file) : void (ctx.status = 404);
    }
    if (rel === '' || !rel.includes('.')) rel = rel.startsWith('softphone') ? 'softphone.html' : 'index.html';
    const file = confined(STATIC_DIR, rel);
    if (!file) return void (ctx.status = 404);
    await sendStatic(ctx, file);
  }

  #session(ctx: Context): { sid: string; s: Session } | null {
    const sid = ctx.cookies.get(SESSION_COOKIE);
    if (!sid) return null;
    const s = this.#sessions.get(sid);
    if (!s) return null;
    if (this.#expired(s, this.#clock.now())) {
      void this.#end(sid);
      return null;
    }
    s.lastSeen = this.#clock.now();
    return { sid, s };
  }

  /**
   * The session, for a request that carries the portal header. `anyMethod`: the header is required on GET too (the
   * proxy: some API GETs change state, e.g. GET /api/calls/hangup, and an image tag can send a GET).
   */
  /** Idle too long, or older than the absolute lifetime (a stolen cookie kept busy still dies). */
  #expired(s: Session, now: number): boolean {
    return s.lastSeen + this.#idleMs < now || s.createdAt + this.#maxMs < now;
  }

  #require(ctx: Context, anyMethod = false): { sid: string; s: Session } {
    const got = this.#session(ctx);
    if (!got) throw new PortalError(401, 'PORTAL_SIGNED_OUT', 'Sign in first.');
    if ((anyMethod || ctx.method !== 'GET') && ctx.get('x-simu-portal') !== '1')
      throw new PortalError(403, 'PORTAL_CSRF', 'Missing the X-Simu-Portal header.');
    return got;
  }

  async #end(sid: string): Promise<void> {
    const s = this.#sessions.get(sid);
    this.#sessions.delete(sid);
    if (s) await revokeApiKey(this.deps.db, s.accountId, s.apiKeyId).catch(() => undefined);
  }

  async #proxy(ctx: Context, next: Next): Promise<void> {
    let got;
    try {
      got = this.#require(ctx, true);
    } catch (e) {
      if (!(e instanceof PortalError)) throw e;
      ctx.status = e.status;
      ctx.body = { detail: e.message, code: e.code };
      return;
    }
    const apiPath = ctx.path.slice('/portal/proxy'.length);
    // Checked on a loose spelling (any case, decoded, repeated slashes): the API router is exact and would 404 the
    // variants anyway, but this guard must not depend on that.
    if (/^\/api\/keys\/create$/.test(loosePath(apiPath))) {
      ctx.status = 403;
      ctx.body = { detail: 'In the portal a key is created with a one-time code.', code: 'PORTAL_TOTP_REQUIRED' };
      return;
    }
    ctx.path = apiPath;
    ctx.request.headers.authorization = `Bearer ${got.s.apiKey}`;
    await next();
  }

  async #api(ctx: Context): Promise<void> {
    const route = `${ctx.method} ${ctx.path.replace(/\/+$/, '')}`;
    if (route === 'POST /portal/api/signin') return this.#signIn(ctx);
    if (route === 'GET /portal/api/me') {
      const got = this.#session(ctx);
      if (!got) throw new PortalError(401, 'PORTAL_SIGNED_OUT', 'Sign in first.');
      ctx.body = this.#me(got.s);
      return;
    }
    const { sid, s } = this.#require(ctx);
    const db = this.deps.db;
    if (route === 'POST /portal/api/signout') {
      await this.#end(sid);
      ctx.cookies.set(SESSION_COOKIE, '', { httpOnly: true, sameSite: 'strict', path: '/', maxAge: 0 });
      ctx.body = { message: 'signed out' };
      return;
    }
    if (route === 'POST /portal/api/keys/create') {
      const body = await readJson(ctx);
      const name = String(body.name ?? '').trim();
      if (!name || name.length > 100) throw new PortalError(400, 'VALIDATION_ERROR', 'A key needs a name.');
      if (!(await spendTotp(db, s.userId, String(body.code ?? ''), this.#clock.now())))
        throw new PortalError(403, 'PORTAL_TOTP_INVALID', 'The one-time code is wrong or already used.');
      const { row, key } = await insertApiKey(db, s.accountId, name);
      ctx.status = 201;
      ctx.body = { ...apiKeyOut(row), key };
      return;
    }
    const ev = /^GET \/portal\/api\/calls\/([0-9a-fA-F-]{36})\/events$/.exec(route);
    if (ev) {
      const call = await findCall(db, s.accountId, ev[1]);
      if (!call) throw new PortalError(404, 'CALL_NOT_FOUND', 'No such call.');
      const rows = await listCallEvents(db, s.accountId, ev[1]);
      ctx.body = rows.map((r) => ({ code: r.code, event: r.event, data: safeJson(r.data), timestamp: r.created_at }));
      return;
    }
    if (route === 'GET /portal/api/webhook-routes') {
      const rows = await listWebhookRoutes(db, s.accountId);
      // A number's status route is shown with its number (null once the number left the account).
      const numberOf = async (route: string) => {
        const id = /^status:number:(.+)$/.exec(route)?.[1];
        return id ? ((await findNumberOf(db, s.accountId, id))?.number ?? null) : null;
      };
      const numbers = await Promise.all(rows.map((r) => numberOf(r.route)));
      ctx.body = rows.map((r, i) => ({
        route: r.route,
        number: numbers[i],
        url: r.url,
        disabled: r.disabled,
        disabled_at: r.disabled_at,
        consecutive_failures: r.consecutive_failures,
      }));
      return;
    }
    if (route === 'POST /portal/api/webhook-routes/enable') {
      const body = await readJson(ctx);
      // One route: the account's status route and a number's override are re-enabled apart, even on one URL.
      const ref = { route: String(body.route ?? ''), url: String(body.url ?? '') };
      const ok = await enableWebhookRoute(db, s.accountId, ref, new Date().toISOString());
      if (!ok) throw new PortalError(404, 'WEBHOOK_ROUTE_NOT_FOUND', 'No such webhook route.');
      ctx.body = { message: 'route re-enabled' };
      return;
    }
    // The portal's reads: the code catalogue, the charts and a call's timeline.
    const read = await portalReads(
      db,
      this.deps.readDb ?? db,
      s.accountId,
      route,
      ctx.query as Record<string, unknown>,
    );
    if (read !== undefined) return void (ctx.body = read);
    throw new PortalError(404, 'NOT_FOUND', 'No such portal endpoint.');
  }

  async #signIn(ctx: Context): Promise<void> {
    await this.ready;
    // Per source address before anything else: a spray of invented emails (each its own lockout counter) must not
    // buy unbounded scrypt work.
    const admit = this.#signInLimiter.take(sourceKey(ctx.ip));
    if (!admit.ok) {
      ctx.set('Retry-After', String(admit.retryAfterSeconds));
      throw new PortalError(
        429,
        'PORTAL_SIGNIN_THROTTLED',
        'Too many sign-in attempts from this address; wait a little.',
      );
    }
    const body = await readJson(ctx);
    const email = String(body.email ?? '')
      .trim()
      .toLowerCase();
    const now = this.#clock.now();
    const f = this.#failures.get(email);
    if (f && f.count >= MAX_FAILURES && f.until > now)
      throw new PortalError(429, 'PORTAL_LOCKED', 'Too many failed sign-ins; try again later.');
    const user = await findPortalUserByEmail(this.deps.db, email);
    // The scrypt runs whether or not the email exists, so timing does not tell which emails have users.
    const passOk = await checkPassword(String(body.password ?? ''), user?.password_hash ?? (await dummyPasswordHash()));
    const ok = !!user && passOk && (await spendTotp(this.deps.db, user.id, String(body.code ?? ''), now));
    if (!ok || !user) {
      const count = f && f.until > now ? f.count + 1 : 1;
      // Bounded memory under a spray of invented emails: expired entries go first.
      if (this.#failures.size > 10_000)
        for (const [k, v] of this.#failures) if (v.until <= now) this.#failures.delete(k);
      this.#failures.set(email, { count, until: now + LOCKOUT_MS });
      throw new PortalError(401, 'PORTAL_SIGNIN_FAILED', 'Email, password or one-time code is wrong.');
    }
    this.#failures.delete(email);
    const account = await findAccount(this.deps.db, user.account_id);
    if (account?.status !== 'active') throw new PortalError(403, 'AUTH_ACCOUNT_SUSPENDED', 'The account is suspended.');
    const { row, key } = await insertApiKey(this.deps.db, user.account_id, SESSION_KEY_NAME);
    const sid = randomBytes(32).toString('base64url');
    this.#sessions.set(sid, {
      userId: user.id,
      accountId: user.account_id,
      email: user.email,
      apiKey: key,
      apiKeyId: row.id,
      createdAt: now,
      lastSeen: now,
    });
    ctx.cookies.set(SESSION_COOKIE, sid, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: this.deps.secureCookies ?? this.deps.config?.publicBaseUrl.startsWith('https:') ?? false,
      overwrite: true,
    });
    ctx.body = this.#me(this.#sessions.get(sid)!);
  }

  /** Who is signed in, and where the softphone registers (WSS preferred: browsers on https pages need it). */
  #me(s: Session) {
    const c = this.deps.config;
    const sip = !c
      ? null
      : c.sip.wssPort > 0
        ? `wss://${c.publicHost}:${c.sip.wssPort}`
        : c.sip.wsPort > 0
          ? `ws://${c.publicHost}:${c.sip.wsPort}`
          : null;
    return { email: s.email, account: s.accountId, sip_websocket: sip };
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
