import { randomBytes, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import type { Context, Middleware } from 'koa';
import type { Config } from '../config/index.js';
import {
  deleteWebSession,
  endExpiredWebSessions,
  findWebSession,
  insertWebSession,
  touchWebSession,
  type Db,
  type WebSessionRow,
} from '../store/index.js';
import { checkPassword, dummyPasswordHash, findOperatorByEmailAddress, spendOperatorTotp } from '../api/index.js';
import { SignInGuard, signInFields } from './sign-in-guard.js';
import { confined, readJsonBody, sendStatic, vendorFile, WebError } from './web-kit.js';
import { consoleApi, sipLadder, type ConsoleLive } from './console-api.js';
import { systemClock, type Clock } from '../kit/index.js';

/**
 * The operator console on the API's HTTP server: pages under /console/, its JSON under /console/api/.
 * Its own sign-in (operators made with `simu operator add`: email, scrypt password, TOTP spent once), never an
 * account's credentials. Sessions as the portal's: a 256-bit id in an HttpOnly SameSite=Strict cookie scoped to
 * /console, 8 h idle / 12 h in all; a state-changing request must carry `X-Simu-Console: 1` (a cross-site form
 * cannot). Every action runs the operation the CLI runs (api/operations.ts) and is audited with the operator's
 * email. Sessions are rows of the store (store/web-sessions.ts), so every node sharing it honours the cookie.
 */
export interface ConsoleDeps {
  db: Db;
  config?: Config;
  /** Where the live view and the charts read (on SQLite a read pool: the store's one connection stays free). */
  readDb?: Db;
  live?: ConsoleLive;
  clock?: Pick<Clock, 'now'>;
  secureCookies?: boolean;
  /** The bearer token `simu trace` reads a call's SIP messages with (sip/: sipTraceToken), without a session. */
  sipTraceToken?: string;
}

export const CONSOLE_COOKIE = 'simu_console';
const STATIC_DIR = path.join(import.meta.dirname, 'static', 'console');
const SHARED = new Set(['charts.js', 'charts.css', 'ui-kit.js', 'http-json.js', 'favicon.svg']);
const IDLE_MS = 8 * 3600_000;
const MAX_MS = 12 * 3600_000;
/** A session's last use is written at most this often (its idle limit is hours). */
const TOUCH_MS = 60_000;

export class Console {
  readonly #clock: Pick<Clock, 'now'>;
  readonly #signInGuard: SignInGuard;

  constructor(private readonly deps: ConsoleDeps) {
    this.#clock = deps.clock ?? systemClock;
    this.#signInGuard = new SignInGuard({
      perMinute: 10,
      burst: 10,
      clock: this.#clock,
      codes: { throttled: 'CONSOLE_SIGNIN_THROTTLED', locked: 'CONSOLE_LOCKED', failed: 'CONSOLE_SIGNIN_FAILED' },
    });
  }

  middleware(): Middleware {
    return async (ctx, next) => {
      const p = ctx.path;
      if (p !== '/console' && !p.startsWith('/console/')) return next();
      try {
        if (p.startsWith('/console/api/')) return await this.#api(ctx);
        return await this.#static(ctx);
      } catch (e) {
        if (!(e instanceof WebError)) throw e;
        ctx.status = e.status;
        ctx.body = { detail: e.message, code: e.code };
      }
    };
  }

  /** Sessions are the store's: they go on on the other nodes and after a restart. */
  close(): void {}

  async #static(ctx: Context): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return void (ctx.status = 405);
    // The API strips a trailing slash before this runs: /console/ arrives as /console.
    const rel = ctx.path.slice('/console/'.length);
    if (rel.startsWith('vendor/')) {
      const file = vendorFile(rel.slice('vendor/'.length));
      return file ? sendStatic(ctx, file) : void (ctx.status = 404);
    }
    // The charts (script and stylesheet), the UI kit, the JSON client and the icon are the portal's too.
    if (SHARED.has(rel)) return sendStatic(ctx, path.join(STATIC_DIR, '..', rel));
    const file = confined(STATIC_DIR, rel === '' || !rel.includes('.') ? 'index.html' : rel);
    if (!file) return void (ctx.status = 404);
    await sendStatic(ctx, file);
  }

  async #session(ctx: Context): Promise<WebSessionRow | null> {
    const sid = ctx.cookies.get(CONSOLE_COOKIE);
    if (!sid || sid.length > 100) return null;
    const s = await findWebSession(this.deps.db, 'console', sid);
    if (!s) return null;
    const now = this.#clock.now();
    if (s.last_seen_at + IDLE_MS < now || s.created_at + MAX_MS < now) {
      await deleteWebSession(this.deps.db, sid);
      return null;
    }
    if (s.last_seen_at + TOUCH_MS <= now) await touchWebSession(this.deps.db, sid, now);
    return s;
  }

  async #api(ctx: Context): Promise<void> {
    const route = `${ctx.method} ${ctx.path.replace(/\/+$/, '')}`;
    if (route === 'POST /console/api/signin') return this.#signIn(ctx);
    const trace = /^GET \/console\/api\/calls\/([A-Za-z0-9_-]{1,64})\/sip$/.exec(route);
    if (trace && this.#traceTokenGiven(ctx)) return void (ctx.body = sipLadder(this.deps.live, trace[1]!));
    const s = await this.#session(ctx);
    if (!s) throw new WebError(401, 'CONSOLE_SIGNED_OUT', 'Sign in first.');
    if (ctx.method !== 'GET' && ctx.get('x-simu-console') !== '1')
      throw new WebError(403, 'CONSOLE_CSRF', 'Missing the X-Simu-Console header.');
    if (route === 'GET /console/api/me') return void (ctx.body = { email: s.email });
    if (route === 'POST /console/api/signout') {
      await deleteWebSession(this.deps.db, ctx.cookies.get(CONSOLE_COOKIE) ?? '');
      ctx.cookies.set(CONSOLE_COOKIE, '', { httpOnly: true, sameSite: 'strict', path: '/console', maxAge: 0 });
      return void (ctx.body = { message: 'signed out' });
    }
    await consoleApi(ctx, route.replace(' /console/api', ' '), {
      db: this.deps.db,
      readDb: this.deps.readDb ?? this.deps.db,
      actor: `operator:${s.email}`,
      live: this.deps.live,
      clock: this.#clock,
    });
  }

  /** The request carries `Authorization: Bearer` with the trace token (compared in constant time). */
  #traceTokenGiven(ctx: Context): boolean {
    const want = this.deps.sipTraceToken;
    const given = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
    if (!want || !given) return false;
    const a = Buffer.from(given);
    const b = Buffer.from(want);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  async #signIn(ctx: Context): Promise<void> {
    this.#signInGuard.admit(ctx);
    const { email, password, code } = signInFields(await readJsonBody(ctx));
    const now = this.#clock.now();
    this.#signInGuard.refuseLocked(email, now);
    const op = await findOperatorByEmailAddress(this.deps.db, email);
    // The scrypt runs whether or not the email exists, so timing does not tell which operators exist.
    const passOk = await checkPassword(password, op?.password_hash ?? (await dummyPasswordHash()));
    const ok = !!op && passOk && (await spendOperatorTotp(this.deps.db, op.id, code, now));
    if (!ok || !op) throw this.#signInGuard.failed(email, now);
    this.#signInGuard.succeeded(email);
    // Sessions that were never used again are dropped here (the table stays bounded by live sessions).
    await endExpiredWebSessions(this.deps.db, 'console', now - IDLE_MS, now - MAX_MS);
    const sid = randomBytes(32).toString('base64url');
    await insertWebSession(this.deps.db, sid, {
      kind: 'console',
      user_id: op.id,
      account_id: null,
      email: op.email,
      api_key_id: null,
      created_at: now,
      last_seen_at: now,
    });
    ctx.cookies.set(CONSOLE_COOKIE, sid, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/console',
      secure: this.deps.secureCookies ?? this.deps.config?.publicBaseUrl.startsWith('https:') ?? false,
      overwrite: true,
    });
    ctx.body = { email: op.email };
  }
}
