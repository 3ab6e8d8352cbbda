import assert from 'node:assert/strict';
import http from 'node:http';
import { addPortalUser, createApp, totp } from '../../api/index.js';
import type { RouteSpec } from '../../api/route-table.js';
import { Portal } from '../../web/server.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';

interface RawReply {
  status: number;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/** One request with the path sent byte for byte (fetch would normalise case-free parts, dot segments and %2e). */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<RawReply> {
  const u = new URL(base);
  const body = method === 'POST' ? '{}' : undefined;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { ...headers, ...(body && { 'content-type': 'application/json', 'content-length': '2' }) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), headers: res.headers }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const UUID = '6f1c2a5e-0b7d-4c1e-9a3b-2d4e5f6a7b8c';

/**
 * Spellings of a route's path (a template: `:name` marks a parameter, left alone) that a lenient router or a
 * decoding proxy might take for the route itself.
 */
export function variants(path: string): string[] {
  const segs = path.split('/').slice(1); // ['api', 'keys', 'create']
  const join = (s: string[]) => '/' + s.join('/');
  const hex = (c: string) => '%' + c.charCodeAt(0).toString(16);
  const mapLast = (f: (seg: string) => string) => {
    // the last literal segment (not a parameter)
    const i = segs.findLastIndex((x) => !x.startsWith(':'));
    return join(segs.map((x, j) => (j === i ? f(x) : x)));
  };
  const literal = (f: (seg: string) => string) => join(segs.map((x) => (x.startsWith(':') ? x : f(x))));
  const out = new Set<string>([
    literal((x) => x.toUpperCase()),
    join(['API', ...segs.slice(1)]),
    join(['Api', ...segs.slice(1)]),
    literal((x) => x.charAt(0).toUpperCase() + x.slice(1)),
    mapLast((x) => x.toUpperCase()),
    literal((x) => [...x].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')),
    // percent-encoded letters (lower- and upper-case hex) of the prefix and of the last literal segment
    join([hex('a') + 'pi', ...segs.slice(1)]),
    mapLast((x) => hex(x[0]!) + x.slice(1)),
    mapLast((x) => hex(x[0]!).toUpperCase() + x.slice(1)),
    // repeated slashes, dot segments (plain and encoded), encoded slashes
    path.replace('/api/', '/api//'),
    '/' + path,
    path.replace('/api/', '/api/./'),
    path.replace('/api/', '/api/x/../'),
    path.replace('/api/', '/api/x/%2e%2e/'),
    path.replace('/api/', '/api/x/%2E%2E/'),
    path.replace('/api/', '/api/%2e/'),
    path.replace(/\//g, '%2f').replace(/^%2f/, '/'),
    path.replace(/\//g, '%2F').replace(/^%2F/, '/'),
  ]);
  out.delete(path);
  return [...out];
}

const concrete = (p: string) => p.replace(/:\w+/g, UUID);

describe('api routing: case, encoding and slash variants of every route reach no handler', function () {
  this.timeout(120_000);
  let h: ApiHarness;
  let t: Tenant;
  let specs: RouteSpec[];
  let portal: Portal;
  let cookie = '';
  const email = 'variants@example.com';
  const password = 'correct horse battery';
  let totpSecret = '';

  before(async () => {
    h = await ApiHarness.start(sqliteDb, { before: (ctx, next) => portal.middleware()(ctx, next) });
    portal = new Portal({ db: h.db, config: h.config });
    t = await h.tenant('Variants', 100_000, '+254700777001');
    const { routes, close } = createApp({
      db: h.db,
      config: h.config,
      calls: h.engine,
      signUrlSecret: h.secret,
      health: async () => h.health,
    });
    specs = [...routes.specs];
    await close();
    // The two public routes registered outside the table.
    specs.push({ method: 'get', path: '/api/health', auth: false, summary: '', ok: { status: 200 } });
    specs.push({ method: 'get', path: '/api/openapi.json', auth: false, summary: '', ok: { status: 200 } });
    totpSecret = (await addPortalUser(h.db, t.accountId, email, password)).totp_secret;
    const r = await fetch(`${h.base}/portal/api/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password, code: totp(totpSecret, Date.now()) }),
    });
    assert.equal(r.status, 200, await r.text());
    cookie = (r.headers.get('set-cookie') ?? '').split(';')[0]!;
    assert.match(cookie, /^simu_portal=/);
  });
  after(async () => {
    await portal?.close();
    await h?.stop();
  });

  const keyCount = async () => Number((await h.db('api_keys').count({ n: '*' }).first())!.n);

  it('the table is what it should be (else the loops below prove little)', () => {
    assert.ok(specs.length >= 30, `only ${specs.length} routes`);
    assert.ok(specs.some((s) => s.path === '/api/numbers/available'));
    assert.deepEqual(variants('/api/keys/create').slice(0, 5), [
      '/API/KEYS/CREATE',
      '/API/keys/create',
      '/Api/keys/create',
      '/Api/Keys/Create',
      '/api/keys/CREATE',
    ]);
  });

  it('the exact paths still answer (a control: 401 without a key, not 404)', async () => {
    for (const s of specs.filter((x) => x.auth !== false)) {
      const r = await raw(h.base, s.method.toUpperCase(), concrete(s.path));
      assert.equal(r.status, 401, `${s.method} ${s.path}: ${r.text}`);
    }
  });

  it('without a key every variant of every route is 401 or 404', async () => {
    const bad: string[] = [];
    for (const s of specs)
      for (const v of variants(s.path).map(concrete)) {
        const r = await raw(h.base, s.method.toUpperCase(), v);
        if (r.status !== 401 && r.status !== 404) bad.push(`${s.method} ${v} -> ${r.status} ${r.text.slice(0, 80)}`);
      }
    assert.deepEqual(bad, []);
  });

  it('with a key every variant is 404 (or 405) and changes nothing', async () => {
    const before = await keyCount();
    const bad: string[] = [];
    for (const s of specs)
      for (const v of variants(s.path).map(concrete)) {
        const r = await raw(h.base, s.method.toUpperCase(), v, { authorization: `Bearer ${t.key}` });
        // 405: the spelling is the path of another route under another method (POST /api/calls/ORIGINATE is
        // GET /api/calls/:uuid's path); no handler ran.
        if (r.status !== 404 && r.status !== 405) bad.push(`${s.method} ${v} -> ${r.status} ${r.text.slice(0, 80)}`);
      }
    assert.deepEqual(bad, []);
    assert.equal(await keyCount(), before, 'a variant of POST /api/keys/create made a key');
  });

  it("the issue's cases: GET /API/numbers/available and POST /API/keys/create", async () => {
    const r = await raw(h.base, 'GET', '/API/numbers/available');
    assert.equal(r.status, 401, r.text);
    const k = await raw(h.base, 'POST', '/API/keys/create', { authorization: `Bearer ${t.key}` });
    assert.equal(k.status, 404, k.text);
  });

  it('through the portal proxy, variants of every route are 403, 404 or 405 and no key is made without a code', async () => {
    const before = await keyCount();
    const session = { cookie, 'x-simu-portal': '1' };
    const bad: string[] = [];
    for (const s of specs)
      for (const v of variants(s.path)
        .map(concrete)
        .filter((x) => x.startsWith('/api/'))) {
        const r = await raw(h.base, s.method.toUpperCase(), `/portal/proxy${v}`, session);
        if (![403, 404, 405].includes(r.status)) bad.push(`${s.method} ${v} -> ${r.status} ${r.text.slice(0, 80)}`);
      }
    assert.deepEqual(bad, []);
    for (const p of ['/api/keys/CREATE', '/api/Keys/Create', '/api/%6beys/create', '/api//keys/create'])
      assert.equal((await raw(h.base, 'POST', `/portal/proxy${p}`, session)).status, 403, p);
    assert.equal(await keyCount(), before, 'the one-time-code guard was bypassed');
    // Control: the proxy itself works with this session.
    const ok = await raw(h.base, 'GET', '/portal/proxy/api/account', session);
    assert.equal(ok.status, 200, ok.text);
  });

  it("variants of the portal's own endpoints reach none of them", async () => {
    const session = { cookie, 'x-simu-portal': '1' };
    const portalRoutes: Array<[string, string]> = [
      ['POST', '/portal/api/signin'],
      ['GET', '/portal/api/me'],
      ['POST', '/portal/api/signout'],
      ['POST', '/portal/api/keys/create'],
      ['GET', `/portal/api/calls/${UUID}/events`],
      ['GET', '/portal/api/webhook-routes'],
      ['POST', '/portal/api/webhook-routes/enable'],
    ];
    const bad: string[] = [];
    for (const [m, p] of portalRoutes)
      for (const v of variants(p.replace('/portal/api/', '/api/')).map((x) => `/portal${x}`)) {
        const r = await raw(h.base, m, v, session);
        // Any spelling that is not the portal's API is a static page (GET) or 405, never JSON from a handler.
        const json = /json/.test(String(r.headers['content-type']));
        if (r.status === 500 || (json && r.status !== 404 && r.status !== 401))
          bad.push(`${m} ${v} -> ${r.status} ${r.text.slice(0, 80)}`);
      }
    assert.deepEqual(bad, []);
    // Control: the session is still signed in (no variant of sign-out took effect).
    assert.equal((await raw(h.base, 'GET', '/portal/api/me', session)).status, 200);
  });
});
