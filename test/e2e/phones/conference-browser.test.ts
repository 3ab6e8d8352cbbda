import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { launchChromium, type LaunchedChromium } from '../../support/chromium.js';
import { nextPort } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { toneAmplitude } from '../../support/tones.js';
import { rms } from '../../../media/index.js';
import { ToneCallers, heardSince } from '../support/conference-legs.js';
import {
  AccountServer,
  addCarrier,
  allocateSwitchPorts,
  api,
  createAccountWithDid,
  startTestSwitch,
  type TestAccount,
} from '../support/harness.js';

const DID = '+254711900182';
const PORTS = { ...allocateSwitchPorts(), ws: nextPort(), wss: nextPort() };

/**
 * The level of `freqs` (Hz) in what the page's softphone hears now: an AnalyserNode on the call's remote stream,
 * the largest FFT magnitude (dB) within one bin of each frequency, averaged over a second of snapshots.
 */
async function levelsInPage(page: Page, freqs: number[]): Promise<number[]> {
  return page.evaluate(async (fs) => {
    const call = (window as any).simuPhone.current();
    const ctx = new AudioContext();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 4096;
    analyser.smoothingTimeConstant = 0;
    ctx.createMediaStreamSource(call.remoteStream).connect(analyser);
    const bins = new Float32Array(analyser.frequencyBinCount);
    const sums = fs.map(() => 0);
    const snapshots = 10;
    for (let s = 0; s < snapshots; s += 1) {
      await new Promise((r) => setTimeout(r, 100));
      analyser.getFloatFrequencyData(bins);
      fs.forEach((f, i) => {
        const at = Math.round((f * analyser.fftSize) / ctx.sampleRate);
        sums[i] += Math.max(bins[at - 1]!, bins[at]!, bins[at + 1]!);
      });
    }
    await ctx.close();
    return sums.map((v) => v / snapshots);
  }, freqs);
}

/**
 * Issue 18's browser participant: a softphone in headless Chromium (WebRTC: ICE, DTLS-SRTP, Opus, transcoded by
 * rtpengine) calls out through the voice_outbound webhook into the conference two SIPp carrier callers play 440
 * and 660 Hz into. The page hears both tones (and no 880 Hz, which nobody plays); muting the 440 Hz caller removes
 * it from what the page hears; the SIPp callers hear the browser's fake microphone.
 */
describe('Conference: a browser participant (issue 18)', function () {
  this.timeout(120_000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let chrome: LaunchedChromium | undefined;
  const hook = new AccountServer();
  const callers = new ToneCallers();

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await hook.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    await addCarrier(ctx.db, nextPort(), 'carrier', ctx.sw);
    const doc = '<Response><Dial><Conference beep="false">mixed</Conference></Dial></Response>';
    hook.verbs('/conference', doc);
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: hook.url('/conference') });
    const r = await api(ctx.baseUrl, acct.key, 'POST', '/api/account/webhooks', {
      purpose: 'voice_outbound',
      url: hook.url('/conference'),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    chrome = await launchChromium([
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
      '--ignore-certificate-errors',
    ]);
  });

  after(async () => {
    callers.remove();
    await chrome?.close();
    await hook.close();
    await ctx?.sw.stop();
  });

  const conference = async () =>
    (await api(ctx.baseUrl, acct.key, 'GET', '/api/conferences')).body.conferences[0] as
      { sid: string; participant_count: number } | undefined;

  it('hears the two SIPp callers (440 and 660 Hz, not 880), loses the muted one, and is heard by them', async () => {
    for (const tone of [440, 660]) {
      const before = (await conference())?.participant_count ?? 0;
      await callers.call({ sip: ctx.ports.sip, did: DID, tone, staySeconds: 60 });
      await eventually(async () => (await conference())?.participant_count === before + 1, `${tone} Hz joined`, 15_000);
    }
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: 'guest@example.com' });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    const context = await chrome!.browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    const frag = new URLSearchParams({
      token: minted.body.token,
      server: `wss://127.0.0.1:${PORTS.wss}`,
      ice: JSON.stringify(minted.body.iceServers),
    });
    await page.goto(`${ctx.baseUrl}/portal/softphone#${frag}`);
    await page.waitForFunction(() => document.querySelector('[data-reg]')?.textContent === 'registered', null, {
      timeout: 15_000,
    });
    await page.evaluate(() => (window as any).simuPhone.phone.call('+254722555000'));
    await page.waitForFunction(() => document.querySelector('[data-call]')?.textContent === 'connected', null, {
      timeout: 20_000,
    });
    await eventually(async () => (await conference())?.participant_count === 3, 'the browser joined', 15_000);
    await new Promise((r) => setTimeout(r, 1500)); // the mix reaches the page (jitter buffers fill)

    const [l440, l660, l880] = await levelsInPage(page, [440, 660, 880]);
    const report = `page hears 440 Hz at ${l440!.toFixed(1)} dB, 660 Hz at ${l660!.toFixed(1)} dB, 880 Hz at ${l880!.toFixed(1)} dB`;
    assert.ok(l440! > l880! + 20 && l660! > l880! + 20, report);

    // Mute the 440 Hz caller: it is gone from what the page hears, 660 Hz stays.
    const sid = (await conference())!.sid;
    const parts = (await api(ctx.baseUrl, acct.key, 'GET', `/api/conferences/${sid}/participants`)).body.participants;
    const muted = await api(
      ctx.baseUrl,
      acct.key,
      'POST',
      `/api/conferences/${sid}/participants/${parts[0].call_sid}`,
      {
        muted: true,
      },
    );
    assert.equal(muted.status, 200);
    await new Promise((r) => setTimeout(r, 800));
    const [m440, m660, m880] = await levelsInPage(page, [440, 660, 880]);
    const after = `muted: page hears 440 Hz at ${m440!.toFixed(1)} dB, 660 Hz at ${m660!.toFixed(1)} dB, 880 Hz at ${m880!.toFixed(1)} dB`;
    assert.ok(m660! > m880! + 20, after);
    console.log(`      ${report}\n      ${after}`);
    assert.ok(m440! < l440! - 20, `${report}\n${after}`);

    // Mute the 660 Hz caller too: all the 440 Hz caller can still hear is the browser's fake microphone (Chromium's
    // beeps), through rtpengine's Opus-to-PCMU transcoding and the mix.
    const second = await api(
      ctx.baseUrl,
      acct.key,
      'POST',
      `/api/conferences/${sid}/participants/${parts[1].call_sid}`,
      {
        muted: true,
      },
    );
    assert.equal(second.status, 200);
    const since = Date.now() + 300;
    await new Promise((r) => setTimeout(r, 2500));
    const heard = heardSince(callers.legs[0]!, since);
    let loudest = 0;
    for (let i = 0; i + 160 <= heard.length; i += 160) loudest = Math.max(loudest, rms(heard, i, i + 160));
    const browserHeard = `the 440 Hz caller: loudest 20 ms ${loudest.toFixed(0)}, 660 Hz at ${toneAmplitude(heard, 660).toFixed(0)}`;
    console.log(`      ${browserHeard}`);
    assert.ok(heard.length >= 8000 && loudest > 500 && toneAmplitude(heard, 660) < 300, browserHeard);
    await page.evaluate(() => (window as any).simuPhone.current().hangup());
    await context.close();
  });
});
