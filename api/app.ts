import http from 'node:http';
import Koa from 'koa';
import { Router } from '@koa/router';
import { StoreAdmission, type Admission, type NewCallGate } from '../billing/index.js';
import { roomLogger, type Config } from '../config/index.js';
import { flushGroupCommit, openReadPool, type Db } from '../store/index.js';
import { apiKeyAuth, authOf } from './auth.js';
import { docsRoutes } from './docs-routes.js';
import type { CallEngine } from '../calls/index.js';
import { errorMiddleware } from './errors.js';
import { redactingLogger } from './log-redaction.js';
import { openApiDocument } from './openapi.js';
import { rateLimit, RequestRateLimiter } from './rate-limit.js';
import { RouteTable, type RouteDeps } from './route-table.js';
import { accountRoutes } from './routes/account.js';
import { assetRoutes } from './routes/assets.js';
import { callRoutes } from './routes/calls.js';
import { callControlRoutes } from './routes/call-control.js';
import { conferenceRoutes } from './routes/conferences.js';
import { numberRoutes } from './routes/numbers.js';
import { queueRoutes } from './routes/queues.js';
import { phoneTokenRoutes } from './routes/phone-tokens.js';
import { recordingRoutes } from './routes/recordings.js';
import { endUserRoutes } from './routes/users.js';
import { walletTopupRoutes } from './routes/wallet-topups.js';
import { prepaidSettingsRoutes } from './routes/prepaid-settings.js';
import { metricsRoute } from './routes/metrics.js';
import type { SwitchMetrics } from '../metrics/index.js';
import { securityHeaders } from './security-headers.js';

export interface ApiDeps {
  db: Db;
  config: Config;
  /** Store and media reachability, and whether this process is draining, for GET /api/health. */
  health: () => Promise<{ store: boolean; media: boolean; draining?: boolean }>;
  calls: CallEngine;
  /** Server secret for signed recording URLs and phone tokens (purpose-specific keys are derived from it). */
  signUrlSecret: string;
  /** Defaults to StoreAdmission over `db`. Pass the switch's shared one so API and SIP calls share the caps. */
  admission?: Admission;
  /** Overload control, asked before every originate (the switch's, shared with the SIP edge). */
  overload?: NewCallGate;
  /** Read connections for hot reads; by default a small read-only pool on SQLite, `db` on PostgreSQL. */
  readDb?: Db;
  /** Mounted before bearer authentication: the web portal (web/server.ts), which forwards /portal/proxy/api/*. */
  before?: Koa.Middleware;
  /** Per-API-key request rate limit; defaults to one built from config.api (tests pass one with a fake clock). */
  rateLimiter?: RequestRateLimiter;
  /** Per-account request rate limit over all the account's keys; defaults to one built from config.api. */
  accountRateLimiter?: RequestRateLimiter;
  /** Served at GET /metrics to the operator's token (routes/metrics.ts); without it there is no /metrics. */
  metrics?: SwitchMetrics;
}

/**
 * The REST API as a Koa app: security headers, one error middleware, trailing-slash tolerance, public endpoints
 * (health, OpenAPI, the docs/ pages, signed recording media), then bearer authentication and the per-key and
 * per-account rate limits in front of every other /api route.
 */
export function createApp(deps: ApiDeps): { app: Koa; routes: RouteTable; close: () => Promise<void> } {
  const log = redactingLogger(roomLogger('api'));
  const ownReadPool = deps.readDb ? undefined : openReadPool(deps.db);
  const d: RouteDeps = {
    db: deps.db,
    readDb: deps.readDb ?? ownReadPool ?? deps.db,
    config: deps.config,
    calls: deps.calls,
    admission: deps.admission ?? new StoreAdmission(deps.db),
    overload: deps.overload,
    signUrlSecret: deps.signUrlSecret,
    health: deps.health,
    log,
  };
  const app = new Koa();
  app.silent = true; // errors are answered and logged by errorMiddleware

  // Paths match exactly as declared: case-sensitive (RFC 3986, 6.2.2.1: only scheme and host are case-insensitive),
  // and undecoded, so a case-changed or percent-encoded spelling never reaches a handler the guards below did not
  // see as that route. Trailing slashes are stripped once, before any guard.
  const publicRouter = new Router({ sensitive: true });
  const privateRouter = new Router({ sensitive: true });
  const all = new RouteTable(privateRouter);
  // Route modules register into `all`; the ones marked `auth: false` (signed media) skip the key check below.
  callRoutes(all, d);
  callControlRoutes(all, d);
  conferenceRoutes(all, d);
  numberRoutes(all, d);
  queueRoutes(all, d);
  recordingRoutes(all, d);
  phoneTokenRoutes(all, d);
  endUserRoutes(all, d);
  accountRoutes(all, d);
  assetRoutes(all, d);
  walletTopupRoutes(all, d);
  prepaidSettingsRoutes(all, d);

  publicRouter.get('/api/health', async (ctx) => {
    let h: { store: boolean; media: boolean; draining?: boolean } = { store: false, media: false };
    try {
      h = await deps.health();
    } catch (err) {
      log.warn({ err }, 'health probe failed');
    }
    // A draining process answers 503 so that a balancer sends new work elsewhere while its calls end.
    const ok = h.store && h.media && !h.draining;
    ctx.status = ok ? 200 : 503;
    ctx.body = { status: h.draining ? 'draining' : ok ? 'ok' : 'degraded' };
  });
  publicRouter.get('/api/openapi.json', async (ctx) => {
    ctx.body = openApiDocument(all.specs, deps.config.publicBaseUrl);
  });
  // The customer reference (docs/*.md) beside the OpenAPI document, public.
  docsRoutes(publicRouter);
  // The operator's Prometheus figures, outside /api and its API keys: their own token.
  if (deps.metrics) metricsRoute(publicRouter, deps.db, deps.metrics);

  // Reads below may go to the read pool: commit the switch's open write group first, so they see every earlier
  // write (store/db.ts flushGroupCommit).
  app.use(async (_ctx, next) => {
    flushGroupCommit(deps.db);
    await next();
  });
  app.use(securityHeaders());
  app.use(errorMiddleware(log));
  // Spec, Endpoints: paths answer with and without the trailing slash.
  app.use(async (ctx, next) => {
    if (ctx.path.length > 1 && ctx.path.endsWith('/')) ctx.path = ctx.path.replace(/\/+$/, '') || '/';
    await next();
  });
  if (deps.before) app.use(deps.before);
  app.use(publicRouter.routes());
  app.use(publicRouter.allowedMethods());
  const auth = apiKeyAuth(deps.db, d.readDb);
  const limiter =
    deps.rateLimiter ??
    new RequestRateLimiter({
      ratePerSecond: deps.config.api.rateLimitPerSecond,
      burst: deps.config.api.rateLimitBurst,
    });
  const accountLimiter =
    deps.accountRateLimiter ??
    new RequestRateLimiter({
      ratePerSecond: deps.config.api.accountRateLimitPerSecond,
      burst: deps.config.api.accountRateLimitBurst,
    });
  const limit = rateLimit([
    { scope: 'key', limiter, keyOf: (ctx) => authOf(ctx)?.apiKeyId },
    { scope: 'account', limiter: accountLimiter, keyOf: (ctx) => authOf(ctx)?.account.id },
  ]);
  const publicPaths = all.specs
    .filter((s) => s.auth === false)
    .map((s) => new RegExp(`^${s.path.replace(/:\w+/g, '[^/]+')}$`));
  app.use(async (ctx, next) => {
    // Any spelling of the /api prefix needs a key (defence in depth next to the case-sensitive routers).
    if (API_PREFIX.test(ctx.path)) {
      if (publicPaths.some((re) => re.test(ctx.path))) return next();
      return auth(ctx, () => limit(ctx, next));
    }
    return next();
  });
  app.use(privateRouter.routes());
  app.use(privateRouter.allowedMethods({ throw: true }));
  return { app, routes: all, close: async () => ownReadPool?.destroy() };
}

const API_PREFIX = /^\/+api(?:\/|$)/i;

export function createApiServer(deps: ApiDeps): { server: http.Server; app: Koa } {
  const { app, close } = createApp(deps);
  const server = http.createServer(app.callback());
  server.once('close', () => void close());
  // Slow or idle clients must not hold sockets for ever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 5_000;
  return { server, app };
}
