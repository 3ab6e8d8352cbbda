import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { addOperator, addPortalUser, totp } from '../../api/index.js';
import { addBan, listBans } from '../../sip/index.js';
import { addPoolNumbers, findAccount, insertTrunk, rollUpCallStats } from '../../store/index.js';
import { CarrierSwitch } from '../e2e/support/carrier-switch.js';
import { RtpSink, SCENARIOS } from '../e2e/support/harness.js';
import { launchChromium, type LaunchedChromium } from '../support/chromium.js';
import { eventually } from '../support/wait.js';
import { seedCdrs } from '../support/seed-cdrs.js';

// SIMU_SCREENSHOTS=1 refreshes docs/screenshots/ (a plain run writes to a temporary directory).
const SHOTS = process.env.SIMU_SCREENSHOTS
  ? path.join(import.meta.dirname, '../../docs/screenshots')
  : mkdtempSync(path.join(os.tmpdir(), 'simu-console-shots-'));
const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

/**
 * Issue 21 "done when": the operator console in headless Chromium against the whole switch. An operator signs in
 * (TOTP computed here), suspends an account and the carrier's call to it is refused (SIPp sees 403), resumes it,
 * lifts a ban, watches SIPp's calls appear in the live view, hangs one up there and sees them all go; the audit
 * log shows each action under the operator's email.
 */
describe('web: operator console in headless Chromium', function () {
  this.timeout(180_000);
  const t = new CarrierSwitch({ did: '+254711950001' });
  let chrome: LaunchedChromium | undefined;
  let page: Page;
  let secret: string;
  let signInAt = 0;
  const dialogs: string[] = [];
  // A long address, as operators' are: it must not push the navigation onto a second line.
  const email = 'duty-operator@nairobi.example.net';
  /** Requests of the console's page answered 400 or more (through the DevTools protocol: favicons included). */
  const failures: string[] = [];
  const password = 'operator passphrase 1';
  const base = () => `http://127.0.0.1:${t.ports.http}`;

  before(async () => {
    await t.start();
    t.sink = await new RtpSink().bind(t.sinkPort);
    // The switch answers the carrier's calls, holds them 6 s, then hangs up.
    t.server.verbs('/inbound', '<Response><Pause length="6"/><Hangup/></Response>');
    await t.setInboundUrl(t.server.url('/inbound'));
    secret = (await addOperator(t.ctx.db, email, password)).totp_secret;
    chrome = await launchChromium();
    page = await (await chrome.browser.newContext({ viewport: VIEWPORTS.desktop })).newPage();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    cdp.on('Network.responseReceived', (e) => {
      if (e.response.status >= 400) failures.push(`${e.response.status} ${e.response.url}`);
    });
    // Suspend and drain ask first: the operator says yes (the questions are checked as they come).
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
  });

  after(async () => {
    t.sipp?.kill();
    t.sink?.close();
    await chrome?.close();
    await t.stop();
    if (!process.env.SIMU_SCREENSHOTS) rmSync(SHOTS, { recursive: true, force: true });
  });

  afterEach(async function () {
    t.sipp?.kill();
    if (this.currentTest?.state === 'failed' && page)
      await page.screenshot({ path: `/tmp/simu-console-failed-${Date.now()}.png` }).catch(() => undefined);
  });

  const go = async (name: string) => {
    await page.goto(`${base()}/console/#/${name}`);
    await page.waitForSelector(`#page[data-page="${name}"]`);
  };

  it('refuses an account credential and a wrong code, then signs the operator in', async () => {
    await page.goto(`${base()}/console/`);
    await page.waitForSelector('#signin-form', { state: 'visible' });
    await page.fill('input[name=email]', email);
    await page.fill('input[name=password]', password);
    await page.fill('input[name=code]', totp(secret, Date.now() + 10 * 60_000));
    await shot('console-signin', 'desktop');
    await page.setViewportSize(VIEWPORTS.phone);
    await shot('console-signin', 'phone');
    await page.setViewportSize(VIEWPORTS.desktop);
    await page.click('#signin-form button');
    await page.waitForFunction(() => document.querySelector('#signin-error')?.textContent !== '');
    assert.match((await page.textContent('#signin-error'))!, /wrong/);
    signInAt = Date.now();
    await page.fill('input[name=code]', totp(secret, signInAt));
    await page.click('#signin-form button');
    await page.waitForSelector('#page[data-page="live"]');
    assert.equal(await page.textContent('#me'), email);
    // Loading the console asks for nothing that is not there (its 401s are the "signed in?" question and the
    // wrong code above).
    await page.waitForLoadState('networkidle');
    assert.deepEqual(
      failures.filter((f) => !f.startsWith('401 ')),
      [],
      'no request failed while the console loaded',
    );
    // At 1280 px the navigation is one line: the bar is no taller than one of its links.
    const nav = await page.$eval('#nav', (n) => ({
      bar: n.getBoundingClientRect().height,
      link: n.querySelector('a')!.getBoundingClientRect().height,
    }));
    assert.ok(nav.bar < nav.link * 1.5, `the navigation wraps at 1280 px: ${JSON.stringify(nav)}`);
    assert.equal(await page.evaluate(() => document.cookie), '', 'the session cookie is HttpOnly');
    // The portal's API does not open the console: without the console's cookie its API says signed out.
    const r = await fetch(`${base()}/console/api/accounts`, { headers: { authorization: `Bearer ${t.acct.key}` } });
    assert.equal(r.status, 401);
  });

  it('suspends the account: the carrier call to its number is refused, and resumed it is answered', async () => {
    await go('accounts');
    await page.click(`tr[data-account="${t.acct.id}"] button.suspend`);
    await page.waitForSelector(`tr[data-account="${t.acct.id}"] button.resume`);
    assert.equal((await findAccount(t.ctx.db, t.acct.id))?.status, 'suspended');
    // Refused at admission: 403 at once, no 180 first (scenarios/uac-inbound-refused.xml without its 180).
    const template = readFileSync(path.join(SCENARIOS, 'uac-inbound-refused.xml'), 'utf8');
    const scenario = path.join(os.tmpdir(), `uac-refused-403-${process.pid}.xml`);
    writeFileSync(
      scenario,
      template.replace('<recv response="180" />', '').replace('response="EXPECTED_STATUS"', 'response="403"'),
    );
    t.sipp = t.carrierCalls(scenario);
    const refused = await t.sipp.done;
    assert.equal(refused.code, 0, refused.stdout + refused.stderr);
    // Read from the store: a suspended account's own key gets 401 at the API.
    const call = await t.ctx.db('calls').where({ account_id: t.acct.id }).orderBy('created_at', 'desc').first();
    assert.equal(call.reason_code, 'BILL.0407');
    await page.click(`tr[data-account="${t.acct.id}"] button.resume`);
    await page.waitForSelector(`tr[data-account="${t.acct.id}"] button.suspend`);
    assert.equal((await findAccount(t.ctx.db, t.acct.id))?.status, 'active');
  });

  it('lifts a ban', async () => {
    await addBan(t.ctx.db, { address: '192.0.2.77', seconds: 3600 });
    await go('bans');
    await page.click('tr[data-ban="192.0.2.77"] button.lift');
    await page.waitForSelector('#no-bans');
    assert.deepEqual(await listBans(t.ctx.db), []);
  });

  it('shows live calls appear while SIPp places them, hangs one up, and sees them all go', async () => {
    await go('live');
    await page.waitForSelector('#no-live-calls');
    t.sipp = t.carrierCalls('uac-inbound.xml', t.did.slice(1), ['-m', '3', '-l', '3', '-r', '10']);
    await page.waitForFunction(() => document.querySelectorAll('tr[data-call]').length === 3, undefined, {
      timeout: 15_000,
    });
    await shot('console-live-calls', 'desktop');
    const victim = await page.getAttribute('tr[data-call] button.hangup >> xpath=ancestor::tr', 'data-call');
    await page.click(`tr[data-call="${victim}"] button.hangup`);
    await page.waitForFunction(
      (id) => !document.querySelector(`tr[data-call="${id}"]`) && document.querySelectorAll('tr[data-call]').length > 0,
      victim,
      { timeout: 5000 },
    );
    const row = await t.ctx.db('calls').where({ id: victim }).first();
    assert.ok(row.ended_at, 'the hung-up call has ended');
    await page.waitForSelector('#no-live-calls', { timeout: 20_000 });
    const sipp = await t.sipp.done;
    assert.equal(sipp.code, 0, sipp.stdout + sipp.stderr);
  });

  it("shows a call's SIP ladder: the messages of its legs in order, each opening to its text", async () => {
    const last = await t.ctx.db('calls').orderBy('created_at', 'desc').first();
    const ladder = async (call: string) => {
      await page.goto(`${base()}/console/#/sip?call=${call}`);
      await page.waitForSelector('#page[data-page="sip"]');
    };
    await ladder(last.sid);
    await page.waitForSelector('tr[data-direction]');
    const rows = await page.$$eval('tr[data-direction]', (trs) =>
      trs.map((tr) => [tr.getAttribute('data-direction') ?? '', tr.querySelector('summary')?.textContent ?? '']),
    );
    assert.match(rows[0]![1], /^INVITE sip:.* \(UDP\)$/);
    assert.equal(rows[0]![0], 'in');
    assert.ok(
      rows.some(([d, m]) => d === 'out' && m.startsWith('SIP/2.0 200 OK')),
      JSON.stringify(rows),
    );
    assert.ok(
      rows.some(([, m]) => m.startsWith('BYE ')),
      JSON.stringify(rows),
    );
    await page.click('tr[data-direction] summary');
    assert.match((await page.textContent('tr[data-direction] pre')) ?? '', /Call-ID: /i);
    await shot('console-sip-ladder', 'desktop');
    await ladder('call_unknown');
    await page.waitForSelector('text=No SIP messages are kept for this call');
  });

  it('drains and resumes the platform; the audit log shows every action under the operator', async () => {
    await go('platform');
    await page.click('button.drain');
    await eventually(() => dialogs.some((m) => /Refuse every new call/.test(m)), 'the drain question');
    await page.waitForSelector('button.resume');
    await page.click('button.resume');
    await page.waitForSelector('button.drain');
    await go('audit');
    const actions = await page.$$eval('tr[data-action]', (rows) =>
      rows.map((r) => [r.getAttribute('data-action'), r.children[1]!.textContent]),
    );
    const mine = actions.filter(([, who]) => who === `operator:${email}`).map(([a]) => a);
    for (const a of [
      'account.suspend',
      'account.resume',
      'ban.lift',
      'call.hangup',
      'platform.drain',
      'platform.resume',
    ])
      assert.ok(mine.includes(a), `${a} in the audit log: ${JSON.stringify(actions)}`);
  });

  it('takes a screenshot of every page at 1280x800 and 390x844', async () => {
    // Something to show: a pool, a second trunk, a ban, six weeks of CDRs rolled up for the charts.
    await addPoolNumbers(t.ctx.db, ['+254711950100', '+254711950101', '+254711950102']);
    await insertTrunk(t.ctx.db, {
      name: 'backup-carrier',
      host: '192.0.2.10',
      port: 5060,
      transport: 'udp',
      username: null,
      password: null,
      inbound_addresses: ['192.0.2.10'],
    });
    await addBan(t.ctx.db, { address: '203.0.113.9', seconds: 3600, reason: 'scanner' });
    await seedCdrs(t.ctx.db, { accountId: t.acct.id, count: 5000, days: 42 });
    // Back-dated CDRs: the switch's minute job only looks back to its last run, so roll everything up once.
    await rollUpCallStats(t.ctx.db, '2000-01-01T00');
    for (const [name, size] of Object.entries(VIEWPORTS)) {
      await page.setViewportSize(size);
      for (const p of [
        'live',
        'accounts',
        'charts',
        'numbers',
        'trunks',
        'rates',
        'destinations',
        'bans',
        'platform',
        'audit',
      ]) {
        await go(p);
        if (p === 'charts') await page.waitForSelector('#charts .uplot');
        if (p === 'charts' && name === 'desktop') await assertChartsFit(page);
        await shot(`console-${p}`, name as keyof typeof VIEWPORTS);
      }
    }
    const charts = await (await fetch(`${base()}/console/api/charts?days=30`)).status;
    assert.equal(charts, 401, 'the charts need a session');
  });

  it('portal: the live event view reads as words (filterable, raw JSON a click away), a call as a timeline', async () => {
    const portalSecret = (await addPortalUser(t.ctx.db, t.acct.id, 'owner@example.net', password)).totp_secret;
    const p = await (await chrome!.browser.newContext({ viewport: VIEWPORTS.desktop })).newPage();
    await p.goto(`${base()}/portal/`);
    await p.fill('input[name=email]', 'owner@example.net');
    await p.fill('input[name=password]', password);
    await p.fill('input[name=code]', totp(portalSecret, Date.now()));
    await p.click('#signin-form button');
    await p.waitForSelector('#event-filters');
    await eventually(() => p.textContent('#stream-state').then((s) => s === 'live'), 'the stream');
    // The dashboard's Calls figure counts the call as it starts, from the stream.
    const figure = p.locator('.card', { hasText: /^Calls/ }).locator('.big');
    const before = Number(await figure.textContent());
    t.sipp = t.carrierCalls();
    await p.waitForSelector('details.event[data-code="CALL.0100"]', { timeout: 20_000 });
    await eventually(
      async () => Number(await figure.textContent()) === before + 1,
      `the Calls figure rising from ${before}`,
      5000,
    );
    const sid = (await p.getAttribute('details.event[data-code="CALL.0100"]', 'data-call'))!;
    const row = await t.ctx.db('calls').where({ sid }).first();
    await p.waitForSelector('details.event[data-code="CALL.0300"]', { timeout: 20_000 });
    // Each line is a sentence about this call: its numbers, and what became of it.
    const said = async (code: string) => (await p.textContent(`details.event[data-code="${code}"] .what`))!;
    await eventually(async () => (await said('CALL.0100')).includes(row.from_number), 'the numbers of the call');
    for (const code of ['CALL.0100', 'CALL.0200', 'CALL.0300']) {
      const what = await said(code);
      assert.ok(what.includes(row.from_number) && what.includes(row.to_number), `${code} names the call: ${what}`);
    }
    assert.doesNotMatch(await said('CALL.0200'), /bridged/, 'the switch answered it itself: nothing was bridged');
    assert.match(await said('CALL.0300'), /ended after \d+ seconds?; cost \d+\.\d{2} KES/);
    const line = (await p.textContent('details.event[data-code="CALL.0300"] summary'))!;
    assert.match(line, /\(END\.0200\)/, `the reason, labelled: ${line}`);
    // A normal end is not styled as an error: in the colour of its class, not the error red.
    const reason = await p.$eval('details.event[data-code="CALL.0300"] .reason', (r) => ({
      cls: r.className,
      color: getComputedStyle(r).color,
    }));
    assert.match(reason.cls, /\bok\b/, JSON.stringify(reason));
    assert.notEqual(reason.color, 'rgb(138, 28, 19)', 'END.0200 is not red');
    assert.equal(await p.isVisible('details.event[data-code="CALL.0300"] pre.raw'), false);
    await p.click('details.event[data-code="CALL.0300"] summary');
    assert.match((await p.textContent('details.event[data-code="CALL.0300"] pre.raw'))!, /"code": "CALL.0300"/);
    await p.fill('#event-filters input[name=code]', 'CALL.03');
    const visible = await p.$$eval('details.event', (ls) => ls.filter((l) => !(l as HTMLElement).hidden).length);
    assert.equal(visible, 1, 'the code filter leaves the one completed call');
    await p.fill('#event-filters input[name=code]', '');
    for (const [size, vp] of Object.entries(VIEWPORTS)) {
      await p.setViewportSize(vp);
      await p.screenshot({ path: path.join(SHOTS, `portal-dashboard-${vp.width}.png`), fullPage: true });
      void size;
    }
    const sipp = await t.sipp.done;
    assert.equal(sipp.code, 0, sipp.stdout + sipp.stderr);
    const call = await t.ctx.db('calls').where({ account_id: t.acct.id }).orderBy('created_at', 'desc').first();
    await p.setViewportSize(VIEWPORTS.desktop);
    await p.goto(`${base()}/portal/#/call/${call.id}`);
    await p.waitForSelector('#timeline li');
    const kinds = await p.$$eval('#timeline li', (ls) => ls.map((l) => (l as HTMLElement).dataset.kind));
    assert.ok(kinds.includes('event') && kinds.includes('charge'), JSON.stringify(kinds));
    // The account's status webhook (the test server) took the callbacks: shown with their delivery time.
    await eventually(async () => {
      await p.goto(`${base()}/portal/#/call/${call.id}`);
      await p.waitForSelector('#timeline li');
      return /ms to deliver/.test((await p.textContent('#timeline'))!);
    }, 'status callbacks with their latency on the timeline');
    assert.match((await p.textContent('#cost'))!, /talk time[\s\S]*Total \(KES\)/);
    const pages = [
      'charts',
      'calls',
      `call/${call.id}`,
      'numbers',
      'recordings',
      'users',
      'webhooks',
      'keys',
      'wallet',
    ];
    for (const vp of Object.values(VIEWPORTS)) {
      await p.setViewportSize(vp);
      for (const name of pages) {
        await p.goto(`${base()}/portal/#/${name}`);
        await p.waitForFunction(() => !/^Loading/.test(document.querySelector('#page')?.textContent ?? ''));
        if (name === 'charts') await p.waitForSelector('#charts .uplot');
        if (name === 'charts' && vp === VIEWPORTS.desktop) await assertChartsFit(p);
        const file = name.startsWith('call/') ? 'call-timeline' : name;
        await p.screenshot({ path: path.join(SHOTS, `portal-${file}-${vp.width}.png`), fullPage: true });
      }
    }
  });

  /**
   * Each chart spans its card (canvas at least 95 % of the card's inner width), the first and the newest bucket's
   * bars lie whole inside the plot, and the time axis reads on the 24-hour clock, day before month.
   */
  async function assertChartsFit(on: Page) {
    const charts = await on.$$eval('#charts figure.chart', (figs) =>
      figs.map((f) => {
        const cs = getComputedStyle(f);
        const inner = f.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        // charts.js keeps each chart's uPlot instance on its card.
        const u = (f as HTMLElement & { uplot?: any }).uplot;
        const xs: number[] = u?.data[0] ?? [];
        return {
          title: f.querySelector('figcaption')!.textContent,
          canvas: f.querySelector('canvas')!.getBoundingClientRect().width,
          inner,
          first: xs[0]!,
          last: xs[xs.length - 1]!,
          step: xs[1]! - xs[0]!,
          min: u?.scales.x.min as number,
          max: u?.scales.x.max as number,
          ticks: (u?.axes[0]._values ?? []) as string[],
        };
      }),
    );
    assert.ok(charts.length >= 5, JSON.stringify(charts));
    for (const c of charts) {
      assert.ok(c.canvas >= 0.95 * c.inner, `${c.title}: canvas ${c.canvas} px in a card of ${c.inner} px`);
      // A bar is 80 % of a bucket wide, centred on it: its half must fit on either side.
      assert.ok(c.max >= c.last + 0.4 * c.step, `${c.title}: the newest bar is cut (${c.max} < ${c.last} + 0.4 step)`);
      assert.ok(c.min <= c.first - 0.4 * c.step, `${c.title}: the first bar is cut`);
      assert.ok(c.ticks.length > 1, `${c.title}: axis labels ${JSON.stringify(c.ticks)}`);
      for (const t of c.ticks)
        assert.match(
          t,
          /^(\d{2}:\d{2}\n)?\d{1,2} \S+$|^\d{2}:\d{2}$/,
          `${c.title}: a 24-hour, day-first label: ${JSON.stringify(t)}`,
        );
    }
  }

  async function shot(name: string, size: keyof typeof VIEWPORTS) {
    await eventually(async () => {
      await page.screenshot({ path: path.join(SHOTS, `${name}-${VIEWPORTS[size].width}.png`), fullPage: true });
      return true;
    }, 'a screenshot');
  }
});
