import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyWebhookSignature } from '../../../events/index.js';
import { nextPort } from '../../support/ports.js';
import { waitForBound } from '../../support/wait.js';
import { MadeAudio } from '../support/made-audio.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  runSipp,
  ulawOf,
  api,
  type ReceivedRequest,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';

const SCENARIOS = path.join(import.meta.dirname, '..', 'support', 'scenarios');

/**
 * Answering machine detection end to end: the switch places calls through a SIPp carrier whose callee answers and
 * plays audio made here (espeak-ng speech, sox tones and silence, as raw mu-law over RTP); the verdict arrives in
 * the call-control request (synchronous) or in a signed callback (async), as AMD.0200 and on the Call object.
 */
describe('e2e: answering machine detection on originated calls', function () {
  this.timeout(180_000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let secret: string;
  let dir: string;
  const server = new AccountServer();
  let sipp: SippRun | undefined;
  const CARRIER = nextPort();
  const audio: Record<string, string> = {};
  /** Where in the machine's audio its beep ends, ms. */
  const BEEP_END_MS = 6000 + 300 + 500;

  let made: MadeAudio;
  /** The callee's scenario playing `ulaw`. */
  function scenario(ulaw: string): string {
    const file = `${ulaw}.xml`;
    writeFileSync(file, readFileSync(path.join(SCENARIOS, 'uas-answer-plays.xml'), 'utf8').replaceAll('[audio]', ulaw));
    return file;
  }

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-amd-e2e-'));
    made = new MadeAudio(dir);
    // A person: "Hello?" after a moment, then waiting. A machine: a 6-second greeting, a pause, a 1,000 Hz beep.
    // A fax: its calling tone (1,100 Hz, 0.5 s on, 3 s off). Nobody: silence.
    const concat = (name: string, parts: string[]) => ulawOf(made.sox(name, parts));
    audio.person = concat('person', [made.silence('p0', 0.4), made.speech('hello', 'Hello?'), made.silence('p1', 6)]);
    audio.machine = concat('machine', [
      made.speech(
        'greeting',
        "Hi, you have reached Sam and Alex. We can't take your call right now. Please leave your name, your number and a short message after the tone, and we will call you back.",
        6,
      ),
      made.silence('m0', 0.3),
      made.tone('beep', 1000, 0.5),
      made.silence('m1', 4),
    ]);
    audio.fax = concat('fax', [
      made.silence('f0', 0.3),
      made.tone('cng1', 1100, 0.5),
      made.silence('f1', 3),
      made.tone('cng2', 1100, 0.5),
      made.silence('f2', 3),
    ]);
    audio.silence = concat('silence', [made.silence('s0', 8)]);

    ctx = await startTestSwitch();
    await server.listen();
    acct = await createAccountWithDid(ctx.db, '+254711100039');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    secret = (await ctx.db('accounts').where({ id: acct.id }).first()).signing_secret;
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  after(async () => {
    sipp?.kill();
    await server.close();
    await ctx?.sw.stop();
  });

  function assertSigned(r: ReceivedRequest, p: string): void {
    const ts = r.headers['x-voice-timestamp'] as string;
    const sig = r.headers['x-voice-signature'] as string;
    assert.ok(verifyWebhookSignature(secret, server.url(p), ts, r.body, sig), `${p} is signed`);
  }

  /**
   * Places a call to a callee playing `play`, with detection `mode` (sync or async), and returns the verdict as
   * the customer received it (the call-control request's fields, or the async callback's), the AMD.0200 event
   * and the Call object once ended.
   */
  async function place(
    name: string,
    play: string,
    mode: 'Enable' | 'DetectMessageEnd',
    async: boolean,
    params: Record<string, number> = {},
  ) {
    const voice = `/voice-${name}`;
    const callback = `/amd-${name}`;
    // Sync: the document runs after the verdict and ends the call. Async: it runs at once and waits; the test hangs
    // up once the callback came.
    server.verbs(voice, async ? '<Response><Pause length="20"/></Response>' : '<Response><Hangup/></Response>');
    sipp = runSipp([...['-sf', scenario(play), '-i', '127.0.0.1', '-p', String(CARRIER), '-m', '1']]);
    await waitForBound(CARRIER).catch((e) => {
      throw new Error(`${e}: ${sipp?.output()}`);
    });
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254722000039',
      from: acct.did,
      url: server.url(voice),
      machine_detection: mode,
      ...(Object.keys(params).length ? { machine_detection_params: params } : {}),
      ...(async ? { async_amd: true, async_amd_status_callback: server.url(callback) } : {}),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const uuid = res.body.uuid as string;
    const sid = res.body.sid as string;
    const event = () =>
      server.requests.find((r) => r.url === '/status' && r.json?.code === 'AMD.0200' && r.json?.sid === sid);
    let verdict: ReceivedRequest;
    if (async) {
      await server.waitFor(() => server.requests.some((r) => r.url === callback), 30_000, 'the async callback');
      verdict = server.requests.find((r) => r.url === callback)!;
      assertSigned(verdict, callback);
      const control = server.requests.find((r) => r.url === voice)!;
      assert.ok(control, 'async: the document was fetched');
      assert.ok(control.at < verdict.at, 'async: the document was fetched before the verdict');
      assert.equal(control.json.AnsweredBy, undefined, 'async: the first request has no verdict yet');
      await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid });
    } else {
      await server.waitFor(() => server.requests.some((r) => r.url === voice), 30_000, 'the call-control request');
      verdict = server.requests.find((r) => r.url === voice)!;
      assertSigned(verdict, voice);
    }
    await server.waitFor(() => event() !== undefined, 15_000, 'AMD.0200');
    await server.waitFor(
      () => server.requests.some((r) => r.url === '/status' && r.json?.code === 'CALL.0300' && r.json?.sid === sid),
      30_000,
      'call.completed',
    );
    assert.equal(await sipp.exited, 0, sipp.output());
    const call = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body;
    assert.equal(call.answered_by, verdict.json.AnsweredBy, 'the Call object has the verdict');
    const data = event()!.json.data;
    assert.equal(data.answeredBy, verdict.json.AnsweredBy);
    assert.equal(data.machineDetectionDuration, verdict.json.MachineDetectionDuration);
    return {
      answeredBy: verdict.json.AnsweredBy as string,
      ms: verdict.json.MachineDetectionDuration as number,
      data,
    };
  }

  for (const async of [false, true]) {
    const how = async ? 'async' : 'sync';

    it(`${how}: a person saying "Hello?" then waiting is human within 2.5 s`, async () => {
      const r = await place(`person-${how}`, audio.person!, async ? 'DetectMessageEnd' : 'Enable', async);
      assert.equal(r.answeredBy, 'human', JSON.stringify(r.data));
      assert.ok(r.ms <= 2500, `${r.ms} ms`);
      assert.deepEqual(
        r.data.segments.map((s: { kind: string }) => s.kind),
        ['silence', 'voice', 'silence'],
      );
    });

    it(`${how}: a 6-second greeting and a beep is machine_end_beep within 500 ms of the beep's end`, async () => {
      const r = await place(`beep-${how}`, audio.machine!, 'DetectMessageEnd', async);
      assert.equal(r.answeredBy, 'machine_end_beep', JSON.stringify(r.data));
      assert.ok(r.ms >= BEEP_END_MS - 100 && r.ms <= BEEP_END_MS + 500, `${r.ms} ms, the beep ends at ${BEEP_END_MS}`);
      const beep = r.data.segments.find((s: { kind: string }) => s.kind === 'tone');
      assert.ok(Math.abs(beep.freqHz - 1000) <= 20, JSON.stringify(beep));
    });

    it(`${how}: the same greeting is machine_start within 4 s with Enable`, async () => {
      const r = await place(`start-${how}`, audio.machine!, 'Enable', async);
      assert.equal(r.answeredBy, 'machine_start', JSON.stringify(r.data));
      assert.ok(r.ms <= 4000, `${r.ms} ms`);
    });

    it(`${how}: a fax calling tone is fax`, async () => {
      const r = await place(`fax-${how}`, audio.fax!, 'Enable', async);
      assert.equal(r.answeredBy, 'fax', JSON.stringify(r.data));
      assert.ok(r.ms <= 1500, `${r.ms} ms`);
    });

    it(`${how}: silence is unknown at the initial silence timeout`, async () => {
      const r = await place(`silence-${how}`, audio.silence!, 'Enable', async, { initial_silence_ms: 3000 });
      assert.equal(r.answeredBy, 'unknown', JSON.stringify(r.data));
      assert.equal(r.data.reason, 'initial_silence');
      assert.ok(r.ms >= 2900 && r.ms <= 3700, `${r.ms} ms`);
    });
  }
});
