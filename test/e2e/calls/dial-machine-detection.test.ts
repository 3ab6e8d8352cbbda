import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyWebhookSignature } from '../../../events/index.js';
import { rms } from '../../../media/g711.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { toneAmplitude } from '../../support/tones.js';
import { waitForBound } from '../../support/wait.js';
import {
  AccountServer,
  SCENARIOS,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrierCallsDid,
  createAccountWithDid,
  runSipp,
  startTestSwitch,
  ulawOf,
  type ReceivedRequest,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';
import { MadeAudio } from '../support/made-audio.js';
import { RtpCapture, toneUlawFile, type HeardPacket } from '../support/rtp-capture.js';

const PORTS = allocateSwitchPorts();
const CARRIER = nextPort();
const DIALLED = '+254722000139';
/** The caller's tone: the dialled callee must hear it through the bridge. */
const CALLER_HZ = 440;

/** 20 ms packets in [from, to) whose RMS is above `threshold`: audio, not silence. */
function loudPackets(packets: HeardPacket[], from: number, to: number, threshold = 300): number {
  return packets.filter((p) => p.at >= from && p.at < to && rms(p.samples) > threshold).length;
}

/** Mean amplitude of `hz` over the packets in [from, to). */
function amplitudeBetween(packets: HeardPacket[], hz: number, from: number, to: number): number {
  const inside = packets.filter((p) => p.at >= from && p.at < to);
  if (inside.length === 0) return 0;
  return inside.reduce((sum, p) => sum + toneAmplitude(p.samples, hz), 0) / inside.length;
}

/**
 * <Dial><Number machineDetection> end to end: a SIPp caller (a carrier delivering a call to a DID) playing a tone is
 * bridged by a document's Dial to a SIPp callee behind the carrier trunk playing generated audio (espeak-ng speech,
 * a sox beep). The parties are bridged at once inside rtpengine; the detector hears a copy of the callee's media
 * (rtpengine's subscription), and the verdict reaches amdStatusCallback signed, as AMD.0200 of the dialled leg and
 * on its Call object, while both parties keep hearing each other (captured on loopback).
 */
describe('e2e: answering machine detection on a Dial <Number>', function () {
  this.timeout(180_000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let secret: string;
  let dir: string;
  const server = new AccountServer();
  const running: SippRun[] = [];
  const captures: RtpCapture[] = [];
  const audio: Record<string, string> = {};
  /** Where in the machine's audio its beep ends, ms. */
  const BEEP_END_MS = 6000 + 300 + 500;

  let made: MadeAudio;
  /** A copy of scenario `name` with `[marker]` replaced by the raw mu-law file `ulaw`. */
  function scenario(name: string, marker: string, ulaw: string): string {
    const file = path.join(dir, `${path.basename(ulaw)}-${name}`);
    writeFileSync(file, readFileSync(path.join(SCENARIOS, name), 'utf8').replaceAll(marker, ulaw));
    return file;
  }

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'simu-dial-amd-e2e-'));
    made = new MadeAudio(dir);
    const concat = (name: string, parts: string[]) => ulawOf(made.sox(name, parts));
    audio.person = concat('person', [made.silence('p0', 0.4), made.speech('hello', 'Hello?'), made.silence('p1', 8)]);
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
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, '+254711100139');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    secret = (await ctx.db('accounts').where({ id: acct.id }).first()).signing_secret;
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });

  after(async () => {
    for (const s of running) s.kill();
    for (const c of captures) c.stop();
    await server.close();
    await ctx?.sw.stop();
  });

  function assertSigned(r: ReceivedRequest, p: string): void {
    const ts = r.headers['x-voice-timestamp'] as string;
    const sig = r.headers['x-voice-signature'] as string;
    assert.ok(verifyWebhookSignature(secret, server.url(p), ts, r.body, sig), `${p} is signed`);
  }

  /**
   * A call to the DID whose document dials a callee playing `play` with `mode`; the test hangs up the caller
   * `talkMs` after the verdict. Returns the verdict as amdStatusCallback received it, the AMD.0200 event, the
   * dialled leg's Call object, and what each party heard.
   */
  async function dial(name: string, play: string, mode: 'Enable' | 'DetectMessageEnd') {
    const voice = `/voice-${name}`;
    const callback = `/amd-${name}`;
    server.verbs(
      voice,
      `<Response><Dial timeout="20"><Number machineDetection="${mode}" amdStatusCallback="${server.url(callback)}"` +
        ` machineDetectionTimeout="20">${DIALLED}</Number></Dial></Response>`,
    );
    await ctx
      .db('numbers')
      .where({ number: acct.did })
      .update({ webhook_voice_inbound: server.url(voice) });
    const [calleeMedia, callerMedia] = [nextPorts(4), nextPorts(4)];
    const calleeHeard = await new RtpCapture(calleeMedia).start();
    const callerHeard = await new RtpCapture(callerMedia).start();
    captures.push(calleeHeard, callerHeard);
    const callee = runSipp([
      ...['-sf', scenario('uas-answer-plays.xml', '[audio]', play), '-i', '127.0.0.1', '-p', String(CARRIER)],
      ...['-mp', String(calleeMedia), '-m', '1'],
    ]);
    running.push(callee);
    await waitForBound(CARRIER).catch((e) => {
      throw new Error(`${e}: ${callee.output()}`);
    });
    const caller = carrierCallsDid({
      sip: PORTS.sip,
      did: acct.did,
      port: nextPort(),
      sink: callerMedia,
      scenario: scenario('uac-inbound-speaks.xml', '[speech]', toneUlawFile(CALLER_HZ, 40)),
      extra: ['-mp', String(callerMedia)],
    });
    running.push(caller);

    await server.waitFor(() => server.requests.some((r) => r.url === callback), 40_000, 'amdStatusCallback');
    const verdict = server.requests.find((r) => r.url === callback)!;
    assertSigned(verdict, callback);
    const parentSid = server.requests.find((r) => r.url === voice)!.json.CallSid as string;
    const leg = await ctx.db('calls').where({ parent_call_sid: parentSid }).first();
    assert.ok(leg, 'the dialled leg has its own call');
    assert.equal(verdict.json.CallSid, leg.sid, "the verdict is the dialled leg's");
    assert.notEqual(verdict.json.CallSid, parentSid);
    assert.equal(verdict.json.To, DIALLED);
    // Both parties heard each other from the answer, the verdict not waited for.
    const answeredAt = leg.answered_at
      ? Date.parse(leg.answered_at)
      : verdict.at - verdict.json.MachineDetectionDuration;
    await new Promise((r) => setTimeout(r, 1000));
    await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid: parentSid });
    assert.equal(await caller.exited, 0, caller.output());
    assert.equal(await callee.exited, 0, callee.output());
    const event = () =>
      server.requests.find((r) => r.url === '/status' && r.json?.code === 'AMD.0200' && r.json?.sid === leg.sid);
    await server.waitFor(() => event() !== undefined, 15_000, 'AMD.0200 of the dialled leg');
    const call = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${leg.id}`)).body;
    return {
      answeredBy: verdict.json.AnsweredBy as string,
      ms: verdict.json.MachineDetectionDuration as number,
      data: event()!.json.data,
      call,
      answeredAt,
      callerHeard: callerHeard.packets(),
      calleeHeard: calleeHeard.packets(),
    };
  }

  /** The bridge carried audio both ways within the first seconds after the answer (before any verdict). */
  function assertTwoWayAudio(r: Awaited<ReturnType<typeof dial>>, figures: Record<string, unknown>): void {
    const from = r.answeredAt;
    const to = r.answeredAt + 2500;
    const callerLoud = loudPackets(r.callerHeard, from, to);
    const calleeTone = amplitudeBetween(r.calleeHeard, CALLER_HZ, from + 300, to);
    if (process.env.SIMU_TEST_FIGURES) console.log({ ...figures, callerLoud, calleeTone });
    assert.ok(callerLoud >= 15, `the caller hears the callee at once: ${callerLoud} loud packets`);
    assert.ok(calleeTone > 1500, `the callee hears the caller's tone: ${calleeTone}`);
  }

  it('DetectMessageEnd: a 6-second greeting and a beep is machine_end_beep at the beep, bridged meanwhile', async () => {
    const r = await dial('beep', audio.machine!, 'DetectMessageEnd');
    assert.equal(r.answeredBy, 'machine_end_beep', JSON.stringify(r.data));
    assert.ok(r.ms >= BEEP_END_MS - 100 && r.ms <= BEEP_END_MS + 500, `${r.ms} ms, the beep ends at ${BEEP_END_MS}`);
    assert.equal(r.data.answeredBy, 'machine_end_beep');
    assert.equal(r.data.mode, 'DetectMessageEnd');
    assert.equal(r.call.answered_by, 'machine_end_beep', "the dialled leg's Call object has the verdict");
    assertTwoWayAudio(r, { ms: r.ms });
  });

  it('Enable: a person saying "Hello?" is human, bridged meanwhile', async () => {
    const r = await dial('person', audio.person!, 'Enable');
    assert.equal(r.answeredBy, 'human', JSON.stringify(r.data));
    assert.ok(r.ms <= 2500, `${r.ms} ms`);
    assert.equal(r.call.answered_by, 'human');
    assertTwoWayAudio(r, { ms: r.ms });
  });
});
