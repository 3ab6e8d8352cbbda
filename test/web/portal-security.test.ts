import assert from 'node:assert/strict';
import http from 'node:http';
import { Portal } from '../../web/server.js';
import { sourceKey } from '../../web/request-keys.js';
import { addPortalUser, totp } from '../../api/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from '../api/harness.js';

interface Reply {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

const DID = '+254700888001';

/**
 * Issue 22, item 10: the portal's CSRF header on every proxied request (GET hangup included), sign-in attempts
 * limited per source address before any password hashing, and an absolute session lifetime besides the idle one.
 */
describe('web: portal hardening (CSRF header on proxied GETs, sign-in throttle per address, absolute lifetime)', function () {
  this.timeout(60_000);
  let h: ApiHarness;
  let t: Tenant;
  let portal: Portal;
  let clock = Date.now();
  let secret = '';
  const email = 'guard@example.com';
  const password = 'correct horse battery';

  /** One request from `from` (a 127/8 address: loopback accepts them all, so each is its own source). */
  const send = (
    method: string,
    path: string,
    o: { cookie?: string; header?: boolean; body?: unknown; from?: string } = {},
  ): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const body = o.body === undefined ? undefined : JSON.stringify(o.body);
      const u = new URL(h.base);
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          method,
          path,
          localAddress: o.from ?? '127.0.0.1',
          headers: {
            ...(o.cookie && { cookie: o.cookie }),
            ...(o.header && { 'x-simu-portal': '1' }),
            ...(body && { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = text;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  /** Signs in 30 s later (a code of a later TOTP step each time: a code is spent once) and returns the cookie. */
  const signIn = async (from: string): Promise<string> => {
    clock += 30_000;
    const r = await send('POST', '/portal/api/signin', { body: { email, password, code: totp(secret, clock) }, from });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String(r.headers['set-cookie']?.[0] ?? '').split(';')[0]!;
  };

  before(async () => {
    h = await ApiHarness.start(sqliteDb, { before: (ctx, next) => portal.middleware()(ctx, next) });
    portal = new Portal({
      db: h.db,
      config: h.config,
      clock: { now: () => clock },
      signInBurst: 5,
      signInPerMinute: 1,
    });
    t = await h.tenant('Portal guard', 1_000_000, DID);
    secret = (await addPortalUser(h.db, t.accountId, email, password)).totp_secret;
  });
  after(async () => {
    await portal?.close();
    await h?.stop();
  });

  it('a proxied GET hangup without the portal header is refused and the call goes on; with it, it ends', async () => {
    const cookie = await signIn('127.0.0.10');
    const placed = await h.req('POST', '/api/calls/originate', {
      key: t.key,
      body: { to: '+254711000001', from: DID, url: 'https://example.test/voice' },
    });
    assert.equal(placed.status, 201, placed.text);
    const { sid, uuid } = placed.body;
    for (const p of [`/portal/proxy/api/calls/hangup?sid=${sid}`, `/portal/proxy/api/calls/hangup/${sid}`]) {
      const r = await send('GET', p, { cookie });
      assert.equal(r.status, 403, p);
      assert.equal(r.body.code, 'PORTAL_CSRF');
    }
    // Plain reads need it too now (the app sends it on every request).
    assert.equal((await send('GET', '/portal/proxy/api/account', { cookie })).status, 403);
    const still = await h.req('GET', `/api/calls/${uuid}`, { key: t.key });
    assert.ok(h.engine.isLive(uuid), 'the refused hangup ended the call');
    assert.equal(still.body.status, 'initiated');
    const ok = await send('GET', `/portal/proxy/api/calls/hangup/${sid}`, { cookie, header: true });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  it("a call by SID is the account's own: another account's SID answers 404 like an unknown one", async () => {
    const other = await h.tenant('Portal neighbour', 1_000_000, '+254700888002');
    const placed = await h.req('POST', '/api/calls/originate', {
      key: other.key,
      body: { to: '+254711000002', from: '+254700888002', url: 'https://example.test/voice' },
    });
    assert.equal(placed.status, 201, placed.text);
    const cookie = await signIn('127.0.0.11');
    const theirs = await send('GET', `/portal/api/calls/by-sid/${placed.body.sid}`, { cookie, header: true });
    assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
    assert.equal(theirs.body.code, 'CALL_NOT_FOUND');
    const mine = await h.req('POST', '/api/calls/originate', {
      key: t.key,
      body: { to: '+254711000003', from: DID, url: 'https://example.test/voice' },
    });
    const own = await send('GET', `/portal/api/calls/by-sid/${mine.body.sid}`, { cookie, header: true });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual([own.body.from_number, own.body.to_number], [DID, '+254711000003']);
  });

  it('sign-in attempts are limited per source address before any password check, other addresses unaffected', async () => {
    const from = '127.0.0.20';
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await send('POST', '/portal/api/signin', {
        body: { email: `invented-${i}@example.com`, password: 'whatever you like', code: '000000' },
        from,
      });
      statuses.push(r.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    // Even the right credentials are refused from there, half a minute later (half a token back at one a minute):
    // the limit is judged before the password, so a throttled attempt costs no scrypt.
    clock += 30_000;
    const right = await send('POST', '/portal/api/signin', {
      body: { email, password, code: totp(secret, clock) },
      from,
    });
    assert.equal(right.status, 429);
    assert.equal(right.body.code, 'PORTAL_SIGNIN_THROTTLED');
    assert.match(String(right.headers['retry-after']), /^[1-9]\d*$/);
    // Another address signs in at once (30 s on); 30 s further the first address has an attempt back.
    await signIn('127.0.0.21');
    await signIn(from);
  });

  it('locks an email after five wrong sign-ins in a row, from any address; the others sign in', async () => {
    const victim = 'locked@example.com';
    const victimSecret = (await addPortalUser(h.db, t.accountId, victim, password)).totp_secret;
    for (let i = 0; i < 5; i++) {
      clock += 60_000; // each from its own address, a minute apart: the per-address budget is not what this is about
      const r = await send('POST', '/portal/api/signin', {
        body: { email: victim, password: 'wrong password!', code: '000000' },
        from: `127.0.0.${40 + i}`,
      });
      assert.equal(r.status, 401, JSON.stringify(r.body));
      assert.equal(r.body.code, 'PORTAL_SIGNIN_FAILED');
    }
    clock += 30_000;
    const locked = await send('POST', '/portal/api/signin', {
      body: { email: victim, password, code: totp(victimSecret, clock) },
      from: '127.0.0.50',
    });
    assert.equal(locked.status, 429, JSON.stringify(locked.body));
    assert.equal(locked.body.code, 'PORTAL_LOCKED');
    await signIn('127.0.0.51');
  });

  it('a sign-in email over 320 characters, password over 1,024 or code over 64 is a 400 naming the field, before any lookup', async () => {
    const attempt = (body: object, from: string) => send('POST', '/portal/api/signin', { body, from });
    const long = await attempt({ email, password: 'x'.repeat(60_000), code: '000000' }, '127.0.0.60');
    assert.equal(long.status, 400, JSON.stringify(long.body));
    assert.equal(long.body.code, 'VALIDATION_ERROR');
    assert.match(long.body.detail, /^password: at most 1024 characters/);
    const longEmail = await attempt(
      { email: `${'a'.repeat(310)}@example.com`, password, code: '000000' },
      '127.0.0.61',
    );
    assert.equal(longEmail.status, 400, JSON.stringify(longEmail.body));
    assert.equal(longEmail.body.code, 'VALIDATION_ERROR');
    assert.match(longEmail.body.detail, /^email: at most 320 characters/);
    const longCode = await attempt({ email, password, code: '1'.repeat(65) }, '127.0.0.62');
    assert.equal(longCode.status, 400, JSON.stringify(longCode.body));
    assert.match(longCode.body.detail, /^code: at most 64 characters/);
    // At the bounds the attempt is judged as any other: a wrong password.
    const edge = await attempt(
      { email: `${'a'.repeat(308)}@example.com`, password: 'y'.repeat(1024), code: '0' },
      '127.0.0.62',
    );
    assert.equal(edge.status, 401, JSON.stringify(edge.body));
    assert.equal(edge.body.code, 'PORTAL_SIGNIN_FAILED');
    // A refusal for length is no failed sign-in of the email: it still signs in.
    await signIn('127.0.0.63');
  });

  it('a session busy all day still ends at the absolute lifetime (12 h), and its API key is revoked', async () => {
    const sessionKeys = async () =>
      (await h.db('api_keys').where({ name: 'portal-session', is_active: true }).select('id')).map((r) => r.id);
    const before = new Set(await sessionKeys());
    const cookie = await signIn('127.0.0.30');
    const me = () => send('GET', '/portal/api/me', { cookie });
    assert.equal((await me()).status, 200);
    const keyId = (await sessionKeys()).find((id) => !before.has(id));
    assert.ok(keyId);
    // Active every hour: the 8 h idle limit never triggers.
    for (let i = 0; i < 11; i++) {
      clock += 3600_000;
      assert.equal((await me()).status, 200, `hour ${i + 1}`);
    }
    clock += 3600_000 + 1000; // past 12 h since sign-in
    const r = await me();
    assert.equal(r.status, 401);
    assert.equal(r.body.code, 'PORTAL_SIGNED_OUT');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the key is revoked just after
    assert.equal(Boolean((await h.db('api_keys').where({ id: keyId }).first()).is_active), false);
  });

  it('serves SIP.js from node_modules as ES modules under vendor/, and nothing outside its lib folder', async () => {
    const entry = await send('GET', '/portal/vendor/sip.js/index.js');
    assert.equal(entry.status, 200);
    assert.match(String(entry.headers['content-type']), /javascript/);
    assert.match(entry.body, /export \* from "\.\/api\/index\.js"/);
    // A module the entry imports, by its relative path: the browser resolves the rest of the library this way.
    assert.equal((await send('GET', '/portal/vendor/sip.js/api/user-agent.js')).status, 200);
    // Each load revalidates the modules; an unchanged one is a 304 without a body. (http, not fetch: fetch sends
    // Cache-Control: no-cache with a conditional header, which asks for the whole file.)
    const again = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get(`${h.base}/portal/vendor/sip.js/index.js`, { headers: { 'if-none-match': entry.headers.etag } }, resolve)
        .on('error', reject),
    );
    again.resume();
    assert.equal(again.statusCode, 304);
    assert.match((await send('GET', '/portal/softphone.js')).body, /from '\.\/vendor\/sip\.js\/index\.js'/);
    for (const p of [
      '/portal/vendor/sip.js/../package.json',
      '/portal/vendor/sip.js/../../uplot/dist/uPlot.esm.js',
      '/portal/vendor/sip.js/..%2f..%2fuplot/package.json',
      '/portal/vendor/sip.js/index.d.ts',
      '/portal/vendor/sip.js/',
      '/portal/vendor/constructor',
      '/portal/vendor/toString/x.js',
    ])
      assert.equal((await send('GET', p)).status, 404, p);
  });

  it('links the charts stylesheet the console shares, before its own', async () => {
    const page = String((await send('GET', '/portal/')).body);
    const links = [...page.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(links.indexOf('/portal/charts.css') >= 0, `the page links charts.css: ${links.join(' ')}`);
    assert.ok(links.indexOf('/portal/charts.css') < links.indexOf('/portal/app.css'), 'app.css comes after');
    const css = await send('GET', '/portal/charts.css');
    assert.equal(css.status, 200);
    assert.match(String(css.headers['content-type']), /^text\/css/);
  });

  it('sign-in budgets are per IPv4 address and per IPv6 /64', () => {
    assert.equal(sourceKey('203.0.113.7'), '203.0.113.7');
    assert.equal(sourceKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(sourceKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(sourceKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
    assert.equal(sourceKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(sourceKey('::1'), '0:0:0:0::/64');
  });
});
