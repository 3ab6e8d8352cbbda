import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Middleware } from 'koa';
import { pino } from 'pino';
import { loadConfig, roomLogger } from '../../config/index.js';
import { replaceRootLogger } from '../../config/logger.js';
import { insertAccount, insertApiKey, type Db } from '../../store/index.js';
import { createApiServer } from '../../api/index.js';
import { NullCallEngine } from '../support/null-call-engine.js';
import { RequestRateLimiter } from '../../api/rate-limit.js';
import { API_CSP } from '../../api/security-headers.js';
import { scrubSecrets } from '../../api/log-redaction.js';
import { Portal } from '../../web/server.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Reply, type Tenant } from './harness.js';

const DID = '+254700555001';

/** A middleware (mounted as `before`) that fails the way a careless library does: the request, key included,
 *  inside the error's message and properties. */
const boom: Middleware = async (ctx, next) => {
  if (ctx.path !== '/api/boom') return next();
  throw Object.assign(new Error(`upstream refused ${ctx.get('authorization')}`), {
    headers: { ...ctx.request.headers },
    request: { headers: { authorization: ctx.get('authorization') } },
  });
};

describe('api abuse: per-key rate limit', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  let other: Tenant;
  let clock = 1_000_000;

  before(async () => {
    // 2 requests/s sustained, burst 4, on a clock the test moves.
    const rateLimiter = new RequestRateLimiter({ ratePerSecond: 2, burst: 4, clock: { now: () => clock } });
    h = await ApiHarness.start(sqliteDb, { rateLimiter });
    t = await h.tenant('Limited', 1_000_000, DID);
    other = await h.tenant('Other', 0);
  });
  after(async () => h?.stop());

  const account = (key: string) => h.req('GET', '/api/account', { key });
  const exhaust = async (key: string) => {
    for (let i = 0; i < 10; i++) if ((await account(key)).status === 429) return;
    assert.fail('the limit never applied');
  };

  it('over the limit: 429, Retry-After in whole seconds, body { detail, code: RATE_LIMITED }', async () => {
    clock += 60_000;
    for (let i = 0; i < 4; i++) assert.equal((await account(t.key)).status, 200, `request ${i + 1} of the burst`);
    const r = await account(t.key);
    assert.equal(r.status, 429);
    assert.deepEqual(Object.keys(r.body).sort(), ['code', 'detail']);
    assert.equal(r.body.code, 'RATE_LIMITED');
    assert.match(r.body.detail, /\w/);
    // One token at 2/s is 0.5 s away: rounded up to 1.
    assert.equal(r.headers.get('retry-after'), '1');
    assert.equal(r.headers.get('cache-control'), 'no-store');
  });

  it('call placement (originate, hangup) is not limited by it, nor are health and OpenAPI', async () => {
    clock += 60_000;
    await exhaust(t.key);
    const sids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body: { to: `+25471100000${i}`, from: DID, url: 'https://example.test/voice' },
      });
      assert.equal(r.status, 201, r.text);
      sids.push(r.body.sid);
    }
    assert.equal((await h.req('POST', '/api/calls/hangup', { key: t.key, body: { sid: sids[0] } })).status, 200);
    assert.equal((await h.req('GET', `/api/calls/hangup?sid=${sids[1]}`, { key: t.key })).status, 200);
    assert.equal((await h.req('GET', `/api/calls/hangup/${sids[2]}`, { key: t.key })).status, 200);
    assert.equal((await h.req('GET', '/api/health')).status, 200);
    assert.equal((await h.req('GET', '/api/openapi.json')).status, 200);
    // ...while the key's other requests still are.
    assert.equal((await account(t.key)).status, 429);
    assert.equal((await h.req('GET', '/api/calls', { key: t.key })).status, 429);
  });

  it('another key, of another account or of the same one, is unaffected', async () => {
    clock += 60_000;
    await exhaust(t.key);
    assert.equal((await account(other.key)).status, 200);
    const { key: second } = await insertApiKey(h.db, t.accountId, 'second');
    assert.equal((await account(second)).status, 200);
    assert.equal((await account(t.key)).status, 429);
  });

  it('the bucket refills at the sustained rate, up to the burst', async () => {
    clock += 60_000;
    await exhaust(t.key);
    clock += 499;
    assert.equal((await account(t.key)).status, 429, 'not yet a whole token');
    clock += 1;
    assert.equal((await account(t.key)).status, 200, 'one token after 0.5 s');
    assert.equal((await account(t.key)).status, 429);
    clock += 10_000; // far longer than a full refill: still only `burst` requests
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await account(t.key)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
  });

  it('the OpenAPI document lists the 429 on limited routes and not on call placement', async () => {
    const doc = (await h.req('GET', '/api/openapi.json')).body;
    assert.match(doc.paths['/api/account/'].get.responses['429'].description, /RATE_LIMITED/);
    assert.match(doc.paths['/api/calls/originate'].post.responses['429'].description, /LIMIT\.0430/);
    assert.doesNotMatch(JSON.stringify(doc.paths['/api/calls/hangup'] ?? {}), /RATE_LIMITED/);
    assert.equal(doc.paths['/api/health/'].get.responses['429'], undefined);
  });

  it('Retry-After grows with the wait and is never 0', () => {
    let now = 0;
    const slow = new RequestRateLimiter({ ratePerSecond: 0.1, burst: 1, clock: { now: () => now } });
    assert.deepEqual(slow.take('k'), { ok: true });
    assert.deepEqual(slow.take('k'), { ok: false, retryAfterSeconds: 10 });
    now += 9_001;
    assert.deepEqual(slow.take('k'), { ok: false, retryAfterSeconds: 1 });
    now += 999;
    assert.deepEqual(slow.take('k'), { ok: true });
  });

  it('memory is bounded: idle buckets are dropped, and at most maxBuckets are kept', () => {
    let now = 0;
    const l = new RequestRateLimiter({ ratePerSecond: 10, burst: 20, clock: { now: () => now }, maxBuckets: 50 });
    for (let i = 0; i < 1000; i++) l.take(`key-${i}`);
    assert.ok(l.size <= 50, `size ${l.size}`);
    now += 2_000; // every bucket has refilled to full: it carries no state any more
    l.take('fresh');
    assert.equal(l.size, 1);
  });
});

describe('api abuse: security headers on every response', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  let portal: Portal | undefined;

  before(async () => {
    h = await ApiHarness.start(sqliteDb, {
      before: async (ctx, next) => {
        if (ctx.path === '/api/boom') return boom(ctx, next);
        portal ??= new Portal({ db: h.db, config: h.config });
        return portal.middleware()(ctx, next);
      },
    });
    t = await h.tenant('Headers', 0);
  });
  after(async () => {
    await portal?.close();
    await h?.stop();
  });

  const common = (r: Reply, what: string) => {
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff', what);
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer', what);
    // Plain HTTP here: HSTS must not be sent (RFC 6797, 7.2).
    assert.equal(r.headers.get('strict-transport-security'), null, what);
  };
  const apiHeaders = (r: Reply, what: string) => {
    common(r, what);
    assert.equal(r.headers.get('x-frame-options'), 'DENY', what);
    assert.equal(r.headers.get('content-security-policy'), API_CSP, what);
  };

  it('200, 401, 404 and 500 API responses carry them; authenticated and /api ones are no-store', async () => {
    const cases: Array<[string, Promise<Reply>, number]> = [
      ['200 authenticated', h.req('GET', '/api/account', { key: t.key }), 200],
      ['200 public health', h.req('GET', '/api/health'), 200],
      ['401 no key', h.req('GET', '/api/account'), 401],
      ['401 wrong key', h.req('GET', '/api/account', { key: 'sk_not-a-real-key-000000000000' }), 401],
      ['404 unknown /api route with a key', h.req('GET', '/api/nope', { key: t.key }), 404],
      ['404 outside /api', h.req('GET', '/nope'), 404],
      ['500 unhandled error', h.req('GET', '/api/boom', { key: t.key }), 500],
    ];
    for (const [what, p, status] of cases) {
      const r = await p;
      assert.equal(r.status, status, `${what}: ${r.text}`);
      apiHeaders(r, what);
      if (status >= 400) assert.deepEqual(Object.keys(r.body).sort(), ['code', 'detail'], what);
      if (what !== '404 outside /api') assert.equal(r.headers.get('cache-control'), 'no-store', what);
    }
  });

  it('portal pages keep the portal policy (same-origin framing, self scripts, WebSocket connect-src)', async () => {
    const r = await h.req('GET', '/portal/');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/html/);
    common(r, 'portal page');
    assert.equal(r.headers.get('x-frame-options'), 'SAMEORIGIN');
    const csp = r.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /connect-src[^;]*\bws:/);
    assert.match(r.text, /<script type="module" src="\/portal\/app.js">/);
    const js = await h.req('GET', '/portal/app.js');
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /javascript/);
    common(js, 'portal script');
    // A signed-out proxied API call is still an API answer.
    const proxied = await h.req('GET', '/portal/proxy/api/account');
    assert.equal(proxied.status, 401);
    common(proxied, 'portal proxy');
    assert.equal(proxied.headers.get('cache-control'), 'no-store');
  });
});

describe('api abuse: secrets never reach the logs', function () {
  this.timeout(30000);
  const lines: string[] = [];
  let prevLevel: string;
  let db: Db;
  let server: http.Server;
  let base: string;
  let key: string;

  before(async () => {
    prevLevel = roomLogger('abuse-test').level;
    // Everything the api room logs, at the most verbose level, into `lines`.
    replaceRootLogger(pino({ level: 'trace' }, { write: (s: string) => void lines.push(s) }));
    db = await sqliteDb.open();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-api-abuse-'));
    const config = loadConfig({ SIMU_DATA_DIR: dataDir, SIMU_LOG_LEVEL: 'trace' }, dataDir);
    ({ server } = createApiServer({
      db,
      config,
      calls: new NullCallEngine(db),
      signUrlSecret: 'sign-secret-that-must-not-leak',
      health: async () => {
        throw Object.assign(new Error('probe failed'), { headers: { authorization: `Bearer ${key}` } });
      },
      before: boom,
    }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const a = await insertAccount(db, 'Logged');
    ({ key } = await insertApiKey(db, a.id, 'real'));
  });
  after(async () => {
    replaceRootLogger(pino({ level: prevLevel ?? 'warn', base: { pid: process.pid } }, pino.destination(2)));
    server?.closeAllConnections?.();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await db?.destroy();
  });

  it('a real key in successful and failing requests never appears; the failure itself is logged', async () => {
    const auth = { authorization: `Bearer ${key}` };
    assert.equal((await fetch(`${base}/api/account`, { headers: auth })).status, 200);
    assert.equal((await fetch(`${base}/api/boom`, { headers: auth })).status, 500);
    assert.equal((await fetch(`${base}/api/health`)).status, 503);
    assert.equal((await fetch(`${base}/api/nope`, { headers: auth })).status, 404);
    const wrong = 'sk_wrongwrongwrongwrongwrongwrongwrongwrongwro';
    assert.equal((await fetch(`${base}/api/account`, { headers: { authorization: `Bearer ${wrong}` } })).status, 401);
    const log = lines.join('');
    assert.match(log, /unhandled error/, 'the 500 was logged (else this test proves nothing)');
    assert.match(log, /health probe failed/);
    assert.match(log, /\[redacted\]/);
    for (const secret of [key, key.slice(3), wrong, 'sign-secret-that-must-not-leak'])
      assert.ok(!log.includes(secret), `a secret was logged:\n${log}`);
  });

  it('free text is scrubbed of keys, bearer credentials, JWTs and URL signatures', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlc2lnbmF0dXJl';
    const text = `key sk_${'a'.repeat(43)} auth Bearer abc.def token ${jwt} url /m/1?exp=9&sig=deadbeef`;
    const out = scrubSecrets(text);
    for (const s of ['a'.repeat(43), 'abc.def', jwt, 'deadbeef']) assert.ok(!out.includes(s), out);
    assert.match(out, /exp=9/);
  });
});
