import assert from 'node:assert/strict';
import { Console } from '../../web/index.js';
import { addOperator, addPortalUser, totp } from '../../api/index.js';
import { findAccount, listAudit } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from '../api/harness.js';

/**
 * Issue 21: the operator console's sign-in and guards, over HTTP against the real middleware: an account's portal
 * credentials never open it, a code is spent once, failures lock an email, writes need the console header, the
 * cookie is HttpOnly/SameSite=Strict on /console, static paths stay in their folder, and actions are audited.
 */
describe('web: operator console guards', function () {
  this.timeout(60_000);
  let h: ApiHarness;
  let t: Tenant;
  let con: Console;
  let clock = Date.now();
  let secret = '';
  const email = 'ops@example.net';
  const password = 'operator passphrase 1';

  const send = async (method: string, path: string, o: { cookie?: string; header?: boolean; body?: unknown } = {}) => {
    const res = await fetch(`${h.base}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(o.cookie && { cookie: o.cookie }),
        ...(o.header && { 'x-simu-console': '1' }),
        ...(o.body !== undefined && { 'content-type': 'application/json' }),
      },
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body, headers: res.headers, text };
  };
  const signIn = (e: string, p: string, code: string) =>
    send('POST', '/console/api/signin', { body: { email: e, password: p, code } });

  before(async () => {
    h = await ApiHarness.start(sqliteDb, { before: (ctx, next) => con.middleware()(ctx, next) });
    con = new Console({ db: h.db, config: h.config, clock: { now: () => clock } });
    t = await h.tenant('Guarded', 1_000_000, '+254700888101');
    secret = (await addOperator(h.db, email, password)).totp_secret;
    await addPortalUser(h.db, t.accountId, 'owner@example.net', password);
  });
  after(async () => {
    con?.close();
    await h?.stop();
  });

  let cookie = '';
  it('an account portal user cannot sign in; an operator can, once per code; the cookie is HttpOnly on /console', async () => {
    const portalSecret = (await h.db('portal_users').where({ email: 'owner@example.net' }).first()).totp_secret;
    const asPortal = await signIn('owner@example.net', password, totp(portalSecret, clock));
    assert.equal(asPortal.status, 401);
    assert.equal(asPortal.body.code, 'CONSOLE_SIGNIN_FAILED');
    const code = totp(secret, clock);
    const ok = await signIn(email, password, code);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const set = ok.headers.get('set-cookie')!;
    assert.match(set, /simu_console=[\w-]{43}/);
    assert.match(set, /path=\/console/i);
    assert.match(set, /httponly/i);
    assert.match(set, /samesite=strict/i);
    cookie = set.split(';')[0]!;
    assert.equal((await signIn(email, password, code)).status, 401, 'a spent code is refused');
    assert.equal((await send('GET', '/console/api/me', { cookie })).body.email, email);
    assert.equal((await send('GET', '/console/api/accounts')).status, 401, 'no cookie, no console');
  });

  it('refuses a write without the console header, and audits the one with it', async () => {
    const bare = await send('POST', `/console/api/accounts/${t.accountId}/suspend`, { cookie });
    assert.equal(bare.status, 403);
    assert.equal(bare.body.code, 'CONSOLE_CSRF');
    assert.equal((await findAccount(h.db, t.accountId))?.status, 'active');
    const r = await send('POST', `/console/api/accounts/${t.accountId}/topup`, {
      cookie,
      header: true,
      body: { amount: '12.50', reason: 'goodwill credit' },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const bad = await send('POST', `/console/api/accounts/${t.accountId}/topup`, {
      cookie,
      header: true,
      body: { amount: '-1' },
    });
    assert.equal(bad.status, 400);
    const [last] = await listAudit(h.db, { limit: 1 });
    assert.equal(last!.actor, `operator:${email}`);
    assert.equal(last!.action, 'wallet.topup');
    const row = await h.db('wallet_transactions').where({ account_id: t.accountId }).orderBy('seq', 'desc').first();
    assert.equal(row.reason, 'goodwill credit');
    const big = await send('POST', '/console/api/accounts', {
      cookie,
      header: true,
      body: { name: 'x'.repeat(70_000) },
    });
    assert.equal(big.status, 413);
  });

  it('locks an email after five wrong sign-ins', async () => {
    // One failure so far (the spent code). A minute apart: the per-address limit is not what this is about.
    for (let i = 0; i < 4; i++) {
      clock += 60_000;
      const r = await signIn(email, 'wrong password!', '000000');
      assert.equal(r.status, 401, JSON.stringify(r.body));
    }
    clock += 30_000;
    const locked = await signIn(email, password, totp(secret, clock));
    assert.equal(locked.status, 429);
    assert.equal(locked.body.code, 'CONSOLE_LOCKED');
  });

  it('refuses an email over 320 characters, a password over 1,024 or a code over 64 with a 400 naming the field', async () => {
    clock += 60_000;
    const long = await signIn('other@example.net', 'x'.repeat(60_000), '000000');
    assert.equal(long.status, 400, JSON.stringify(long.body));
    assert.equal(long.body.code, 'VALIDATION_ERROR');
    assert.match(long.body.detail, /^password: at most 1024 characters/);
    clock += 60_000;
    const longEmail = await signIn(`${'a'.repeat(310)}@example.net`, password, '000000');
    assert.equal(longEmail.status, 400, JSON.stringify(longEmail.body));
    assert.match(longEmail.body.detail, /^email: at most 320 characters/);
    clock += 60_000;
    const longCode = await signIn('other@example.net', password, '1'.repeat(65));
    assert.equal(longCode.status, 400, JSON.stringify(longCode.body));
    assert.match(longCode.body.detail, /^code: at most 64 characters/);
  });

  it('serves its pages and uPlot from node_modules, and nothing outside its folder', async () => {
    const page = await send('GET', '/console/');
    assert.equal(page.status, 200);
    assert.match(page.text, /operator console/);
    assert.match(page.headers.get('content-security-policy')!, /default-src 'self'/);
    const lib = await send('GET', '/console/vendor/uplot.js');
    assert.equal(lib.status, 200);
    assert.match(lib.headers.get('content-type')!, /javascript/);
    assert.match(lib.text, /uPlot/);
    for (const p of [
      '/console/..%2f..%2fpackage.json',
      '/console/vendor/..%2f..%2fpackage.json',
      '/console/%2e%2e/server.ts',
    ])
      assert.notEqual((await send('GET', p)).status, 200, p);
  });

  it("is ES modules like the portal: one module script, the portal's UI kit and charts", async () => {
    const page = (await send('GET', '/console/')).text;
    assert.match(page, /<script type="module" src="\/console\/console\.js"><\/script>/);
    const main = (await send('GET', '/console/console.js')).text;
    assert.match(main, /^import .* from '\.\/ui-kit\.js';$/m);
    assert.doesNotMatch(main, /window\.ConsoleUi/);
    for (const shared of ['/console/ui-kit.js', '/console/charts.js']) {
      const r = await send('GET', shared);
      assert.equal(r.status, 200, shared);
      assert.match(r.text, /^export /m, shared);
    }
  });

  it("styles the charts with the portal's charts stylesheet, under its own palette", async () => {
    const page = (await send('GET', '/console/')).text;
    const links = [...page.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(links.indexOf('/console/charts.css') >= 0, `the page links charts.css: ${links.join(' ')}`);
    assert.ok(links.indexOf('/console/charts.css') < links.indexOf('/console/console.css'), 'console.css comes after');
    const r = await send('GET', '/console/charts.css');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/css/);
    assert.match(r.text, /^figure\.chart \{/m);
  });
});
