import type { Context, Next } from 'koa';

/** For JSON responses: nothing may load, nothing may frame it (CSP Level 3, frame-ancestors). */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";
/** One year; sent only on responses that themselves came over HTTPS (RFC 6797, 7.2: never over plain HTTP). */
const HSTS = 'max-age=31536000';

const isPortal = (p: string): boolean => p === '/portal' || p.startsWith('/portal/');
/** JSON answers: the REST API and the portal's own JSON endpoints and proxy to it. */
const isApi = (p: string): boolean =>
  p === '/api' || p.startsWith('/api/') || p.startsWith('/portal/api/') || p.startsWith('/portal/proxy/');

/**
 * The outermost middleware: headers every response carries, errors and 404s included (they are set before the
 * rest runs and the error middleware does not clear them).
 *
 * - `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` everywhere.
 * - `X-Frame-Options` and `Content-Security-Policy`: DENY and `API_CSP` by default. Under /portal the portal's
 *   own static handler (web/server.ts) replaces both for its pages (SAMEORIGIN, 'self' scripts, ws:/wss:
 *   connect-src); other /portal responses default to SAMEORIGIN so the portal may frame its own pages.
 * - `Cache-Control: no-store` on every authenticated response (also when the portal proxies to the API) and on
 *   JSON (API and portal API) responses that did not choose a policy themselves.
 * - `Strict-Transport-Security` only when this request came over TLS (`ctx.secure`). The server here speaks plain
 *   HTTP; behind a TLS terminator the terminator must add HSTS (docs/security.md).
 */
export function securityHeaders() {
  return async (ctx: Context, next: Next): Promise<void> => {
    const portal = isPortal(ctx.path);
    const api = isApi(ctx.path); // before the portal proxy rewrites /portal/proxy/api/* to /api/*
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', portal ? 'SAMEORIGIN' : 'DENY');
    ctx.set('Content-Security-Policy', API_CSP);
    if (ctx.secure) ctx.set('Strict-Transport-Security', HSTS);
    try {
      await next();
    } finally {
      if (ctx.state.auth || (api && !ctx.response.get('Cache-Control'))) ctx.set('Cache-Control', 'no-store');
    }
  };
}
