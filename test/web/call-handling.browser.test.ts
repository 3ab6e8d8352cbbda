import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { addPortalUser, totp } from '../../api/index.js';
import { insertCall, insertRecording } from '../../store/index.js';
import { api, createAccountWithDid, startTestSwitch, type TestAccount } from '../e2e/support/harness.js';
import { launchChromium, type LaunchedChromium } from '../support/chromium.js';

/**
 * Issue 19, item 3 in the portal (web/static/call-handling.js), in Debian's headless Chromium: an end-user's
 * "Calls" form sets DND, forwards, ring time and voicemail through the API, and lists its voicemail messages.
 */
describe('web: call handling and voicemail in the portal', function () {
  this.timeout(90_000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let chrome: LaunchedChromium | undefined;
  let page: Page;
  let user: { uuid: string; extension_number: string };

  before(async () => {
    ctx = await startTestSwitch();
    acct = await createAccountWithDid(ctx.db, '+254711950001');
    const secret = (await addPortalUser(ctx.db, acct.id, 'owner@example.com', 'correct horse battery')).totp_secret;
    user = (await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: 'desk@example.com' })).body;
    const c = await insertCall(ctx.db, {
      account_id: acct.id,
      direction: 'internal',
      from_number: '1009',
      to_number: user.extension_number,
      status: 'completed',
    });
    await insertRecording(ctx.db, {
      account_id: acct.id,
      call_id: c.id,
      call_sid: c.sid,
      duration_seconds: 7,
      storage_path: '/nowhere.wav',
      end_user_id: user.uuid,
      voicemail_status: 'new',
    });
    chrome = await launchChromium();
    page = await (await chrome.browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    await page.goto(`${ctx.baseUrl}/`);
    await page.waitForSelector('#signin-form', { state: 'visible' });
    await page.fill('input[name=email]', 'owner@example.com');
    await page.fill('input[name=password]', 'correct horse battery');
    await page.fill('input[name=code]', totp(secret, Date.now()));
    await page.click('#signin-form button');
    await page.waitForSelector('#events', { state: 'visible' });
  });

  after(async () => {
    await chrome?.close();
    await ctx?.sw.stop();
  });

  it('the Calls form shows the messages and saves DND, forwards, ring time and voicemail', async () => {
    await page.goto(`${ctx.baseUrl}/portal/#/users`);
    await page.click(`button[data-handling="${user.uuid}"]`);
    await page.waitForSelector('#call-handling');
    assert.match((await page.textContent('#vm-table'))!, /7\s*new/);
    await page.check('#call-handling input[name=dnd]');
    await page.fill('#call-handling input[name=forward_busy]', '1002');
    await page.fill('#call-handling input[name=forward_no_answer]', '+254711000001');
    await page.fill('#call-handling input[name=no_answer_seconds]', '15');
    await page.check('#call-handling input[name=voicemail_enabled]');
    await page.click('#call-handling button');
    await page.waitForSelector(`button[data-handling="${user.uuid}"]:has-text("DND")`);
    const u = (await api(ctx.baseUrl, acct.key, 'GET', '/api/users')).body[0];
    assert.equal(u.dnd, true);
    assert.equal(u.forward_busy, '1002');
    assert.equal(u.forward_no_answer, '+254711000001');
    assert.equal(u.forward_always, null, 'a blank field is null');
    assert.equal(u.no_answer_seconds, 15);
    assert.equal(u.voicemail_enabled, true);
  });

  it('a bad forward target is refused and the error shown beside the form', async () => {
    await page.click(`button[data-handling="${user.uuid}"]`);
    await page.waitForSelector('#call-handling');
    await page.fill('#call-handling input[name=forward_always]', 'sip:evil@example.com');
    await page.click('#call-handling button');
    await page.waitForFunction(() => document.querySelector('#call-handling .error')?.textContent);
    assert.match((await page.textContent('#call-handling .error'))!, /extension|E\.164/);
    const u = (await api(ctx.baseUrl, acct.key, 'GET', '/api/users')).body[0];
    assert.equal(u.forward_always, null);
  });
});
