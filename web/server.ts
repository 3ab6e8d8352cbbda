import { createHmac, randomBytes } from 'node:crypto';
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
  deleteWebSession,
  endExpiredWebSessions,
  findWebSession,
  insertWebSession,
  revokeApiKey,
  touchWebSession,
  type Db,
  type WebSessionRow,
} from '../store/index.js';
import { apiKeyOut, checkPassword, dummyPasswordHash, findPortalUserByEmail, spendTotp } from '../api/index.js';
import { loosePath } from './request-keys.js';
import { SignInGuard, signInFields } from './sign-in-guard.js';
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
 *   API key. Each session mints its own API key (named `portal-session`), revoked at sign-out or expiry, so the REST
 *   API's own authentication, account status checks and rate limits apply to portal requests unchanged (no second
 *   authorization path to get wrong).
 * - Sessions are rows of the store (store/web-sessions.ts: the session id's SHA-256, the user, the key's id), so
 *   every node sharing the store honours the cookie and a restart signs nobody out. The key itself is not stored:
 *   it is an HMAC of the session id (sessionApiKey), rebuilt from the cookie on each request.
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

type Session = WebSessionRow & { account_id: string };

export const SESSION_COOKIE = 'simu_portal';
/** The name of the API key each portal session runs under (hidden on the portal's key page). */
export const SESSION_KEY_NAME = 'portal-session';
const STATIC_DIR = path.join(import.meta.dirname, 'static');
/** A session's last use is written at most this often (its idle limit is hours). */
const TOUCH_MS = 60_000;

/** The API key of a portal session: a function of the session id alone, so no node stores it. */
export function sessionApiKey(sessionId: string): string {
  return `sk_${createHmac('sha256', sessionId).update('simu portal session key').digest('base64url')}`;
}

export class Portal {
  readonly #clock: Pick<Clock, 'now'>;
  readonly #idleMs: number;
  readonly #maxMs: number;
  readonly #signInGuard: SignInGuard;

  readonly #sweep: NodeJS.Timeout;

  constructor(private readonly deps: PortalDeps) {
    this.#clock = deps.clock ?? systemClock;
    this.#idleMs = deps.sessionIdleMs ?? 8 * 3600_000;
    this.#maxMs = deps.sessionMaxMs ?? 12 * 3600_000;
    this.#signInGuard = new SignInGuard({
      perMinute: deps.signInPerMinute ?? 10,
      burst: deps.signInBurst ?? 10,
      clock: this.#clock,
      codes: { throttled: 'PORTAL_SIGNIN_THROTTLED', locked: 'PORTAL_LOCKED', failed: 'PORTAL_SIGNIN_FAILED' },
    });
    // Idle sessions end (and their keys are revoked) even if their browser never comes back; any node's sweep does.
    this.#sweep = setInterval(() => void this.#endExpired().catch(() => undefined), 60_000);
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

  /** Stops the sweep. Sessions are the store's: they go on on the other nodes and after a restart. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
  }

  async #endExpired(): Promise<void> {
    const now = this.#clock.now();
    for (const s of await endExpiredWebSessions(this.deps.db, 'portal', now - this.#idleMs, now - this.#maxMs))
      await this.#revokeKey(s);
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

  async #session(ctx: Context): Promise<{ sid: string; s: Session } | null> {
    const sid = ctx.cookies.get(SESSION_COOKIE);
    if (!sid || sid.length > 100) return null;
    const s = await findWebSession(this.deps.db, 'portal', sid);
    if (!s?.account_id) return null;
    const now = this.#clock.now();
    if (this.#expired(s, now)) {
      await this.#end(sid);
      return null;
    }
    if (s.last_seen_at + TOUCH_MS <= now) await touchWebSession(this.deps.db, sid, now);
    return { sid, s: s as Session };
  }

  /**
   * The session, for a request that carries the portal header. `anyMethod`: the header is required on GET too (the
   * proxy: some API GETs change state, e.g. GET /api/calls/hangup, and an image tag can send a GET).
   */
  /** Idle too long, or older than the absolute lifetime (a stolen cookie kept busy still dies). */
  #expired(s: WebSessionRow, now: number): boolean {
    return s.last_seen_at + this.#idleMs < now || s.created_at + this.#maxMs < now;
  }

  async #require(ctx: Context, anyMethod = false): Promise<{ sid: string; s: Session }> {
    const got = await this.#session(ctx);
    if (!got) throw new PortalError(401, 'PORTAL_SIGNED_OUT', 'Sign in first.');
    if ((anyMethod || ctx.method !== 'GET') && ctx.get('x-simu-portal') !== '1')
      throw new PortalError(403, 'PORTAL_CSRF', 'Missing the X-Simu-Portal header.');
    return got;
  }

  /** Ends a session (every node): its row goes, and its key is revoked by whoever removed the row. */
  async #end(sid: string): Promise<void> {
    const s = await deleteWebSession(this.deps.db, sid);
    if (s) await this.#revokeKey(s);
  }

  async #revokeKey(s: WebSessionRow): Promise<void> {
    if (s.account_id && s.api_key_id)
      await revokeApiKey(this.deps.db, s.account_id, s.api_key_id).catch(() => undefined);
  }

  async #proxy(ctx: Context, next: Next): Promise<void> {
    let got;
    try {
      got = await this.#require(ctx, true);
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
    ctx.request.headers.authorization = `Bearer ${sessionApiKey(got.sid)}`;
    await next();
  }

  async #api(ctx: Context): Promise<void> {
    const route = `${ctx.method} ${ctx.path.replace(/\/+$/, '')}`;
    if (route === 'POST /portal/api/signin') return this.#signIn(ctx);
    if (route === 'GET /portal/api/me') {
      const got = await this.#session(ctx);
      if (!got) throw new PortalError(401, 'PORTAL_SIGNED_OUT', 'Sign in first.');
      ctx.body = this.#me(got.s);
      return;
    }
    const { sid, s } = await this.#require(ctx);
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
      if (!(await spendTotp(db, s.user_id, String(body.code ?? ''), this.#clock.now())))
        throw new PortalError(403, 'PORTAL_TOTP_INVALID', 'The one-time code is wrong or already used.');
      const { row, key } = await insertApiKey(db, s.account_id, name);
      ctx.status = 201;
      ctx.body = { ...apiKeyOut(row), key };
      return;
    }
    const ev = /^GET \/portal\/api\/calls\/([0-9a-fA-F-]{36})\/events$/.exec(route);
    if (ev) {
      const call = await findCall(db, s.account_id, ev[1]);
      if (!call) throw new PortalError(404, 'CALL_NOT_FOUND', 'No such call.');
      const rows = await listCallEvents(db, s.account_id, ev[1]);
      ctx.body = rows.map((r) => ({ code: r.code, event: r.event, data: safeJson(r.data), timestamp: r.created_at }));
      return;
    }
    if (route === 'GET /portal/api/webhook-routes') {
      const rows = await listWebhookRoutes(db, s.account_id);
      // A number's status route is shown with its number (null once the number left the account).
      const numberOf = async (route: string) => {
        const id = /^status:number:(.+)$/.exec(route)?.[1];
        return id ? ((await findNumberOf(db, s.account_id, id))?.number ?? null) : null;
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
      const ok = await enableWebhookRoute(db, s.account_id, ref, new Date().toISOString());
      if (!ok) throw new PortalError(404, 'WEBHOOK_ROUTE_NOT_FOUND', 'No such webhook route.');
      ctx.body = { message: 'route re-enabled' };
      return;
    }
    // The portal's reads: the code catalogue, the charts and a call's timeline.
    const read = await portalReads(
      db,
      this.deps.readDb ?? db,
      s.account_id,
      route,
      ctx.query as Record<string, unknown>,
    );
    if (read !== undefined) return void (ctx.body = read);
    throw new PortalError(404, 'NOT_FOUND', 'No such portal endpoint.');
  }

  async #signIn(ctx: Context): Promise<void> {
    this.#signInGuard.admit(ctx);
    const { email, password, code } = signInFields(await readJson(ctx));
    const now = this.#clock.now();
    this.#signInGuard.refuseLocked(email, now);
    const user = await findPortalUserByEmail(this.deps.db, email);
    // The scrypt runs whether or not the email exists, so timing does not tell which emails have users.
    const passOk = await checkPassword(password, user?.password_hash ?? (await dummyPasswordHash()));
    const ok = !!user && passOk && (await spendTotp(this.deps.db, user.id, code, now));
    if (!ok || !user) throw this.#signInGuard.failed(email, now);
    this.#signInGuard.succeeded(email);
    const account = await findAccount(this.deps.db, user.account_id);
    if (account?.status !== 'active') throw new PortalError(403, 'AUTH_ACCOUNT_SUSPENDED', 'The account is suspended.');
    const sid = randomBytes(32).toString('base64url');
    const { row } = await insertApiKey(this.deps.db, user.account_id, SESSION_KEY_NAME, sessionApiKey(sid));
    const session: Session = {
      kind: 'portal',
      user_id: user.id,
      account_id: user.account_id,
      email: user.email,
      api_key_id: row.id,
      created_at: now,
      last_seen_at: now,
    };
    await insertWebSession(this.deps.db, sid, session);
    ctx.cookies.set(SESSION_COOKIE, sid, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: this.deps.secureCookies ?? this.deps.config?.publicBaseUrl.startsWith('https:') ?? false,
      overwrite: true,
    });
    ctx.body = this.#me(session);
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
    return { email: s.email, account: s.account_id, sip_websocket: sip };
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
