import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { addPoolNumbers } from '../../store/index.js';
import { addPortalUser, totp } from '../../api/index.js';
import {
  AccountServer,
  api,
  createAccountWithDid,
  startTestSwitch,
  type TestAccount,
  allocateSwitchPorts,
} from '../e2e/support/harness.js';
import { nextPort } from '../support/ports.js';
import { launchChromium, type LaunchedChromium } from '../support/chromium.js';

// SIMU_SCREENSHOTS=1 refreshes docs/screenshots/; otherwise they go to a temporary directory (a test run must
// not rewrite tracked files).
const SHOTS = process.env.SIMU_SCREENSHOTS
  ? path.join(import.meta.dirname, '../../docs/screenshots')
  : mkdtempSync(path.join(os.tmpdir(), 'simu-web-shots-'));
const PORTS = { ...allocateSwitchPorts(), ws: nextPort(), wss: nextPort() };

/**
 * Issue 9 "done when": the real portal pages in headless Chromium (Debian's, never a downloaded one) against the
 * whole switch: sign-in with a TOTP code computed here, an API key created with a fresh code, a phone token
 * minted, the softphone registered over WSS and calling out through a voice_outbound webhook that answers with
 * Say, the audio level measured in the page, and the call seen on the calls page.
 */
describe('web: portal and softphone in headless Chromium', function () {
  this.timeout(120_000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let chrome: LaunchedChromium | undefined;
  let page: Page;
  let dash: Page | undefined;
  let secret: string;
  let signInAt = 0;
  const hook = new AccountServer();
  const email = 'owner@example.com';
  const password = 'correct horse battery';
  const base = `http://127.0.0.1:${PORTS.http}`;

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await hook.listen();
    acct = await createAccountWithDid(ctx.db, '+254711900001');
    await addPoolNumbers(ctx.db, ['+254711900002', '+254711900003']);
    hook.verbs(
      '/outbound',
      '<Response><Say>Hello from the Simu switch, this is a test of the browser phone.</Say>' +
        '<Record maxLength="2" timeout="5" playBeep="false"/><Hangup/></Response>',
    );
    const r = await api(ctx.baseUrl, acct.key, 'POST', '/api/account/webhooks', {
      purpose: 'voice_outbound',
      url: hook.url('/outbound'),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    secret = (await addPortalUser(ctx.db, acct.id, email, password)).totp_secret;
    // A fake microphone without a permission prompt, the switch's self-signed WSS.
    chrome = await launchChromium([
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
      '--ignore-certificate-errors',
    ]);
    const context = await chrome.browser.newContext({
      viewport: { width: 1200, height: 800 },
      ignoreHTTPSErrors: true,
    });
    page = await context.newPage();
    if (process.env.WEB_DEBUG) await page.addInitScript(() => ((globalThis as any).SIMU_SIP_DEBUG = true));
    page.on(
      'response',
      (r) => process.env.WEB_DEBUG && console.log('      <', r.status(), r.request().method(), r.url()),
    );
    page.on('console', (m) => process.env.WEB_DEBUG && console.log('      console:', m.text()));
    page.on('pageerror', (e) => process.env.WEB_DEBUG && console.log('      pageerror:', e.message));
  });

  after(async () => {
    await chrome?.close();
    await hook.close();
    await ctx?.sw.stop();
    if (!process.env.SIMU_SCREENSHOTS) rmSync(SHOTS, { recursive: true, force: true });
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      await page.screenshot({ path: `/tmp/simu-web-failed-${Date.now()}.png` }).catch(() => undefined);
      console.log((await page.textContent('main').catch(() => ''))?.slice(0, 500));
    }
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  it('refuses a wrong one-time code, then signs in with the right one', async () => {
    await page.goto(`${base}/`);
    await page.waitForSelector('#signin-form', { state: 'visible' });
    await page.fill('input[name=email]', email);
    await page.fill('input[name=password]', password);
    await page.fill('input[name=code]', totp(secret, Date.now() + 5 * 60_000));
    await shot('signin');
    await page.click('#signin-form button');
    await page.waitForFunction(() => document.querySelector('#signin-error')?.textContent !== '');
    assert.match((await page.textContent('#signin-error'))!, /wrong/);
    signInAt = Date.now();
    await page.fill('input[name=code]', totp(secret, signInAt));
    await page.click('#signin-form button');
    await page.waitForSelector('#events', { state: 'visible' });
    assert.equal(await page.textContent('#me'), email);
    // The session cookie is HttpOnly: page script cannot read it.
    assert.equal(await page.evaluate(() => document.cookie), '');
  });

  it('creates an API key with a fresh code (the sign-in code is refused) and the secret works', async () => {
    await page.goto(`${base}/portal/#/keys`);
    await page.waitForSelector('#new-key');
    await page.fill('#new-key input[name=name]', 'reporting');
    await page.fill('#new-key input[name=code]', totp(secret, signInAt));
    await page.click('#new-key button');
    await page.waitForFunction(() =>
      /already used|wrong/.test(document.querySelector('#new-key .error')?.textContent ?? ''),
    );
    // The step after the sign-in's is later than the one spent and (under a minute on) inside the ±1 window.
    await page.fill('#new-key input[name=code]', totp(secret, signInAt + 30_000));
    await page.click('#new-key button');
    const key = (await (await page.waitForSelector('#key-secret')).textContent())!.trim();
    await shot('api-keys');
    const r = await api(ctx.baseUrl, key, 'GET', '/api/account');
    assert.equal(r.status, 200);
    assert.equal(r.body.uuid, acct.id);
    // The proxy does not offer key creation without a code.
    const direct = await page.evaluate(async () => {
      const res = await fetch('/portal/proxy/api/keys/create', {
        method: 'POST',
        headers: { 'X-Simu-Portal': '1', 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'sneaky' }),
      });
      return res.status;
    });
    assert.equal(direct, 403);
  });

  it('acquires a number and shows the wallet charge', async () => {
    await page.goto(`${base}/portal/#/numbers`);
    await page.click('button[data-acquire]');
    await page.waitForFunction(() => document.querySelectorAll('button[data-release]').length === 2);
    await shot('numbers');
    await page.goto(`${base}/portal/#/wallet`);
    await page.waitForSelector('#balance');
    await shot('wallet');
    await page.goto(`${base}/portal/#/webhooks`);
    await page.waitForSelector('#endpoints');
    assert.equal(await page.inputValue('#endpoints input[name=voice_outbound]'), hook.url('/outbound'));
    await shot('webhooks');
  });

  it('creates an end-user, mints a phone token and registers the softphone over WSS', async () => {
    await page.goto(`${base}/portal/#/users`);
    await page.waitForSelector('#new-user');
    await page.fill('#new-user input[name=email]', 'agent@example.com');
    await page.fill('#new-user input[name=display_name]', 'Agent One');
    await page.click('#new-user button');
    await page.waitForFunction(
      () => document.querySelector('button[data-mint]') || document.querySelector('#new-user .error')?.textContent,
    );
    assert.equal(await page.textContent('#new-user .error'), '');
    dash = await page.context().newPage();
    await dash.goto(`${base}/portal/#/dashboard`);
    await dash.waitForFunction(() => document.querySelector('#stream-state')?.textContent === 'live');
    await page.bringToFront();
    await page.click('button[data-mint]');
    await page.waitForSelector('#phone-token');
    await page.waitForFunction(() => document.querySelector('[data-reg]')?.textContent !== 'starting', null, {
      timeout: 15_000,
    });
    await page.waitForFunction(
      () => /registered|failed|cannot/.test(document.querySelector('[data-reg]')?.textContent ?? ''),
      null,
      {
        timeout: 15_000,
      },
    );
    const reg = await page.textContent('[data-reg]');
    await shot('softphone');
    assert.equal(reg, 'registered');
    const row = await ctx.db('end_users').where({ account_id: acct.id, email: 'agent@example.com' }).first();
    assert.equal(row.registration_state, 'registered');
  });

  it('calls out through the voice_outbound webhook, hears the Say in the page, and the call is listed', async () => {
    await page.fill('[data-dial] input[name=to]', '+254722555000');
    await page.click('[data-dial] button');
    await page.waitForFunction(
      () => /connected|ended/.test(document.querySelector('[data-call]')?.textContent ?? ''),
      null,
      {
        timeout: 20_000,
      },
    );
    assert.equal(await page.textContent('[data-call]'), 'connected');
    // The speech starts right after the answer; sample the meter for a few seconds.
    await page
      .waitForFunction(() => (window as any).simuPhone.peak() > 0.05, null, { timeout: 8_000 })
      .catch(() => undefined);
    await shot('softphone-call');
    const peak = await page.evaluate(() => (window as any).simuPhone.peak() as number);
    console.log(`      remote audio peak RMS level in the page: ${peak.toFixed(4)} (full scale 1)`);
    assert.ok(peak > 0.02, `no audible audio in the page (peak RMS ${peak})`);
    await page.waitForFunction(() => /ended/.test(document.querySelector('[data-call]')?.textContent ?? ''), null, {
      timeout: 20_000,
    });
    await page.goto(`${base}/portal/#/calls`);
    await page.waitForSelector('#list table');
    assert.match((await page.textContent('#list'))!, /\+254722555000/);
    // The filters reach the API: no failed calls, one completed call to that number.
    await page.selectOption('#filters select[name=status]', 'failed');
    await page.click('#filters button');
    await page.waitForFunction(() => /^0 calls/.test(document.querySelector('#list p')?.textContent ?? ''));
    await page.selectOption('#filters select[name=status]', 'completed');
    await page.fill('#filters input[name=search]', '2555000');
    await page.click('#filters button');
    await page.waitForFunction(() => /^1 calls/.test(document.querySelector('#list p')?.textContent ?? ''));
    await shot('calls');
    // The Record verb took two seconds of the page's fake microphone; wait until the recording is stored.
    const deadline = Date.now() + 10_000;
    while ((await api(ctx.baseUrl, acct.key, 'GET', '/api/recordings')).body.length === 0) {
      assert.ok(Date.now() < deadline, 'no recording stored');
      await new Promise((r) => setTimeout(r, 200));
    }
    await page.click('#list table a');
    await page.waitForSelector('#timeline');
    await page.click('#timeline li.recording button');
    const duration = await page.waitForFunction(
      () => {
        const a = document.querySelector('#timeline audio') as HTMLAudioElement | null;
        return a && a.readyState >= 1 && Number.isFinite(a.duration) && a.duration > 0 ? a.duration : null;
      },
      null,
      { timeout: 10_000 },
    );
    const seconds = (await duration.jsonValue()) as number;
    assert.ok(seconds > 1 && seconds < 4, `recording plays ${seconds} s`);
    assert.match((await page.textContent('#timeline'))!, /call\.(completed|answered)/);
    // The cost breakdown, with its total.
    assert.match((await page.textContent('#cost'))!, /Total \(KES\)/);
    await shot('call-detail');
    await page.goto(`${base}/portal/#/recordings`);
    await page.waitForSelector('#rec-table td');
    await shot('recordings');
  });

  it('answers an incoming call: a second softphone (the embeddable page) calls extension 1001', async () => {
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: 'caller@example.com' });
    assert.equal(user.status, 201);
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    // The first phone stopped when the portal left the end-users page; start it again there.
    await page.goto(`${base}/portal/#/users`);
    await page.click('button[data-mint]');
    await page.waitForFunction(() => document.querySelector('[data-reg]')?.textContent === 'registered', null, {
      timeout: 15_000,
    });
    const caller = await page.context().newPage();
    try {
      const frag = new URLSearchParams({
        token: minted.body.token,
        server: `wss://127.0.0.1:${PORTS.wss}`,
        ice: JSON.stringify(minted.body.iceServers),
      });
      await caller.goto(`${base}/portal/softphone#${frag}`);
      await caller.waitForFunction(() => document.querySelector('[data-reg]')?.textContent === 'registered');
      await page.bringToFront();
      await caller.evaluate(() => (window as any).simuPhone.phone.call('1001'));
      await page.waitForSelector('[data-answer]:not([hidden])', { timeout: 15_000 });
      await page.click('[data-answer]');
      await page.waitForFunction(() => document.querySelector('[data-call]')?.textContent === 'connected');
      await caller.waitForFunction(() => document.querySelector('[data-call]')?.textContent === 'connected', null, {
        timeout: 10_000,
      });
      await shot('softphone-incoming');
      // The caller's fake microphone (a beep) crosses the switch to the answering page.
      await page
        .waitForFunction(() => (window as any).simuPhone.peak() > 0.02, null, { timeout: 8_000 })
        .catch(() => undefined);
      const peak = await page.evaluate(() => (window as any).simuPhone.peak() as number);
      console.log(`      incoming call: caller's audio peak RMS level at the answering page: ${peak.toFixed(4)}`);
      assert.ok(peak > 0.01, `no audio from the caller (peak RMS ${peak})`);
      await caller.click('[data-hangup]');
      // The caller hung up: the switch's BYE reaches the answering page over its WebSocket flow.
      await page.waitForFunction(() => /ended/.test(document.querySelector('[data-call]')?.textContent ?? ''), null, {
        timeout: 10_000,
      });
    } finally {
      await caller.close();
    }
  });

  it('the keypad sends RFC 4733 digits: pressing 5 ends a Record with finishOnKey="5" at once', async () => {
    hook.verbs(
      '/outbound',
      `<Response><Record finishOnKey="5" maxLength="30" timeout="20" playBeep="false" action="${hook.url('/keyed')}"/></Response>`,
    );
    hook.verbs('/keyed', '<Response><Hangup/></Response>');
    const before = hook.requests.length;
    await page.fill('[data-dial] input[name=to]', '+254722555001');
    await page.click('[data-dial] button');
    await page.waitForFunction(() => document.querySelector('[data-call]')?.textContent === 'connected', null, {
      timeout: 20_000,
    });
    await page.waitForSelector('[data-keypad]:not([hidden])');
    await new Promise((r) => setTimeout(r, 2000)); // two seconds of the fake microphone's beeps are recorded
    await page.click('[data-key="5"]');
    await hook.waitFor(() => hook.requests.slice(before).some((r) => r.url === '/keyed'), 10_000, 'the Record action');
    const after = hook.requests.slice(before).find((r) => r.url === '/keyed')!.json;
    // The microphone never falls silent, so only the key can have ended it before maxLength (30 s).
    assert.ok(
      after.RecordingDuration >= 1 && after.RecordingDuration <= 8,
      `RecordingDuration ${after.RecordingDuration}`,
    );
    await page.waitForFunction(() => /ended/.test(document.querySelector('[data-call]')?.textContent ?? ''), null, {
      timeout: 10_000,
    });
  });

  it('the keypad drives a Gather: 4 then 2, pressed during its prompt, reach the action as Digits', async () => {
    hook.verbs(
      '/outbound',
      `<Response><Gather numDigits="2" timeout="10" action="${hook.url('/gathered')}">` +
        '<Say>Please enter the two digit code of your branch, then wait while we look it up for you.</Say>' +
        '</Gather></Response>',
    );
    hook.verbs('/gathered', '<Response><Hangup/></Response>');
    const before = hook.requests.length;
    await page.fill('[data-dial] input[name=to]', '+254722555001');
    await page.click('[data-dial] button');
    await page.waitForFunction(() => document.querySelector('[data-call]')?.textContent === 'connected', null, {
      timeout: 20_000,
    });
    await page.waitForSelector('[data-keypad]:not([hidden])');
    await new Promise((r) => setTimeout(r, 1000)); // the prompt is playing
    await page.click('[data-key="4"]');
    await new Promise((r) => setTimeout(r, 300));
    await page.click('[data-key="2"]');
    await hook.waitFor(() => hook.requests.slice(before).some((r) => r.url === '/gathered'), 10_000, 'the action');
    assert.equal(hook.requests.slice(before).find((r) => r.url === '/gathered')!.json.Digits, '42');
    await page.waitForFunction(() => /ended/.test(document.querySelector('[data-call]')?.textContent ?? ''), null, {
      timeout: 10_000,
    });
  });

  it('the dashboard (open in a second tab during the call) showed the live events', async () => {
    assert.ok(dash, 'the dashboard tab was not opened');
    const text = (await dash.textContent('#events'))!;
    assert.match(text, /AUTH\.0200/);
    assert.match(text, /call\.(answered|completed)/);
    await dash.screenshot({ path: path.join(SHOTS, 'dashboard.png'), fullPage: true });
    await dash.close();
  });

  it('re-enables an auto-disabled status webhook route and rotates the signing secret', async () => {
    const url = hook.url('/status-dead');
    await ctx.db('webhook_routes').insert({
      account_id: acct.id,
      url,
      consecutive_failures: 5,
      disabled: true,
      disabled_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    });
    await page.goto(`${base}/portal/#/webhooks`);
    await page.waitForSelector('button[data-enable]');
    await page.click('button[data-enable]');
    await page.waitForFunction(() => !document.querySelector('button[data-enable]'));
    const row = await ctx.db('webhook_routes').where({ account_id: acct.id, url }).first();
    assert.equal(Boolean(row.disabled), false);
    assert.equal(Number(row.consecutive_failures), 0);
    // The signing secret: shown on request, rotated after a confirmation, and the API agrees.
    await page.click('#show-secret');
    await page.waitForFunction(() => !/•/.test(document.querySelector('#secret')?.textContent ?? '•'));
    const before = (await page.textContent('#secret'))!;
    page.once('dialog', (d) => void d.accept());
    await page.click('#rotate');
    await page.waitForFunction((old) => document.querySelector('#secret')?.textContent !== old, before);
    const rotated = (await page.textContent('#secret'))!;
    const r = await api(ctx.baseUrl, acct.key, 'GET', '/api/account/webhooks/secret');
    assert.equal(r.body.signing_secret, rotated);
    assert.notEqual(rotated, before);
  });

  it('refuses proxied writes without the portal header, and signing out revokes the session key', async () => {
    const noHeader = await page.evaluate(async () => {
      const r = await fetch('/portal/proxy/api/users/create', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email: 'csrf@example.com' }),
      });
      return r.status;
    });
    assert.equal(noHeader, 403);
    const live = await ctx.db('api_keys').where({ account_id: acct.id, name: 'portal-session', is_active: true });
    assert.equal(live.length, 1);
    await page.click('#signout');
    await page.waitForSelector('#signin-form', { state: 'visible' });
    const after = await ctx.db('api_keys').where({ account_id: acct.id, name: 'portal-session', is_active: true });
    assert.equal(after.length, 0);
    const status = await page.evaluate(async () => (await fetch('/portal/proxy/api/account')).status);
    assert.equal(status, 401);
    // Five failures lock the email for a while (also for emails without a user: no enumeration by lockout).
    const codes = await page.evaluate(async () => {
      const out: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await fetch('/portal/api/signin', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong password', code: '000000' }),
        });
        out.push(r.status);
      }
      return out;
    });
    assert.deepEqual(codes, [401, 401, 401, 401, 401, 429]);
  });
});
