import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeG711, rms } from '../../../media/g711.js';
import { parseRtp } from '../../../media/rtp-packet.js';
import { setRate } from '../../../store/index.js';
import { waitForBound } from '../../support/wait.js';
import { nextPorts } from '../../support/ports.js';
import { carrier, speakingCarrierScenario, type SippRun } from '../support/harness.js';
import { useCarrierSwitch, type CarrierSwitch } from '../support/carrier-switch.js';
import { toneUlawFile } from '../support/rtp-capture.js';

/**
 * The media engine dies under an answered, bridged call (a Dial from a carrier's caller to a carrier's callee,
 * both SIPp streaming real RTP): the switch's supervised rtpengine is SIGKILLed. Without Redis the call ends
 * honestly (END.0502, BYE to both legs, billed to the kill); with Redis the engine restarts holding the call and
 * the callee hears the caller again.
 */

/** Every PCMU packet a peer was sent, with its arrival time: to measure a gap in what it heard. */
class TimedSink {
  readonly socket = dgram.createSocket('udp4');
  readonly heard: Array<{ at: number; loud: boolean }> = [];

  async bind(port: number): Promise<this> {
    this.socket.on('message', (msg) => {
      const p = parseRtp(msg);
      if (p?.payloadType !== 0) return;
      const samples = decodeG711(p.payload, 0);
      this.heard.push({ at: Date.now(), loud: rms(samples, 0, samples.length) > 300 });
    });
    await new Promise<void>((r) => this.socket.bind(port, '127.0.0.1', () => r()));
    return this;
  }

  /** The first audible packet that arrived after `t` (epoch ms). */
  firstLoudAfter(t: number): number | undefined {
    return this.heard.find((h) => h.loud && h.at > t)?.at;
  }

  loudCount(): number {
    return this.heard.filter((h) => h.loud).length;
  }

  close(): void {
    this.socket.close();
  }
}

const DID = '+254711300001';
const CALLEE = '+254722000077';

/** The pid of the switch's supervised rtpengine (its pid file), checked to be that engine before it is killed. */
function supervisedEnginePid(t: CarrierSwitch): number {
  const pid = Number(readFileSync(path.join(t.ctx.config.dataDir, 'rtpengine.pid'), 'utf8').trim());
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  assert.ok(cmdline.includes('rtpengine') && cmdline.includes(`127.0.0.1:${t.ports.ng}`), cmdline);
  return pid;
}

interface BridgedCall {
  caller: SippRun;
  callee: SippRun;
  sink: TimedSink;
  answeredAt: number;
}

/** The carrier's caller speaks a steady tone for 40 s into a Dial to the carrier's callee, whose audio we hear. */
async function bridgedCall(t: CarrierSwitch, timeLimit: number, calleeMedia: number, callerMedia: number) {
  t.server.verbs(
    '/dial',
    `<Response><Dial timeout="10" timeLimit="${timeLimit}" callerId="${DID}"><Number>${CALLEE}</Number></Dial></Response>`,
  );
  await t.setInboundUrl(t.server.url('/dial'));
  const sink = await new TimedSink().bind(calleeMedia);
  const callee = carrier({ port: t.carrierPort, sink: calleeMedia });
  await waitForBound(t.carrierPort);
  const caller = t.carrierCalls(speakingCarrierScenario(toneUlawFile(440, 40)), DID.slice(1), [
    '-mp',
    String(callerMedia),
  ]);
  await t.server.waitFor(() => t.server.statusEvents().includes('DIAL.0200'), 15000, 'DIAL.0200');
  // The callee hears the caller before anything is killed.
  await t.server.waitFor(() => sink.loudCount() >= 50, 10000, 'the callee hears the caller');
  return { caller, callee, sink, answeredAt: Date.now() } satisfies BridgedCall;
}

/** A caller to the DID hears a long Say followed by `after`; resolves once the Say is playing. */
async function callInSay(t: CarrierSwitch, after: string): Promise<{ caller: SippRun; sid: () => Promise<string> }> {
  const words = 'This announcement is long enough to be playing when the media engine is lost. '.repeat(6);
  t.server.verbs('/say', `<Response><Say>${words}</Say>${after}</Response>`);
  await t.setInboundUrl(t.server.url('/say'));
  const before = t.server.statusEvents().filter((c) => c === 'CALL.0200').length;
  const caller = t.carrierCalls();
  await t.server.waitFor(
    () => t.server.statusEvents().filter((c) => c === 'CALL.0200').length > before,
    15000,
    'the call answered',
  );
  await t.server.waitFor(() => t.sink.speechSeconds() >= 1, 10000, 'the Say heard');
  const sid = async () =>
    (await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first()).sid as string;
  return { caller, sid };
}

async function rowsOfLastCall(t: CarrierSwitch) {
  const parent = await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first();
  const leg = await t.ctx.db('calls').where({ parent_call_id: parent.id }).first();
  return { parent, leg };
}

describe('e2e: the media engine dies under a bridged call, without Redis', function () {
  this.timeout(60000);
  // Per-second billing at 1.00 a second for the dialled leg: the bill shows the second the media stopped.
  const t = useCarrierSwitch({
    did: DID,
    env: {
      SIMU_RTPENGINE_REDIS: 'off',
      SIMU_BILLING_INITIAL_SECONDS: '1',
      SIMU_BILLING_INCREMENT_SECONDS: '1',
    },
  });
  const CALLEE_MEDIA = nextPorts(2);
  const CALLER_MEDIA = nextPorts(4);
  let call: BridgedCall | undefined;

  afterEach(() => {
    call?.caller.kill();
    call?.callee.kill();
    call?.sink.close();
    call = undefined;
  });

  it('the call ends within 5 s with END.0502, both legs get BYE, and it is billed only to the kill', async () => {
    await setRate(t.ctx.db, 'outbound', 6000);
    call = await bridgedCall(t, 60, CALLEE_MEDIA, CALLER_MEDIA);
    await new Promise((r) => setTimeout(r, 2000)); // some talk time to bill
    const pid = supervisedEnginePid(t);
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');

    // Both SIPp legs get BYE (their scenarios end with it: exit 0) and the terminal event is sent, within 5 s.
    const within5s = <T>(p: Promise<T>, what: string) =>
      Promise.race([
        p,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within 5 s`)), 5000)),
      ]);
    assert.equal(await within5s(call.caller.exited, 'the caller BYE'), 0, call.caller.output());
    assert.equal(await within5s(call.callee.exited, 'the callee BYE'), 0, call.callee.output());
    await t.server.waitFor(
      () => t.server.statusEvents().includes('CALL.0300'),
      Math.max(100, killedAt + 5000 - Date.now()),
      'CALL.0300 within 5 s of the kill',
    );
    const { parent, leg } = await rowsOfLastCall(t);
    // One terminal status callback for each CDR (the caller's call and the dialled leg), with the new reason.
    const terminal = (sid: string) =>
      t.server.requests.filter((r) => r.url === '/status' && r.json?.code === 'CALL.0300' && r.json.data?.sid === sid);
    await t.server.waitFor(() => terminal(leg.sid).length > 0, 3000, "the dialled leg's CALL.0300");
    for (const sid of [parent.sid, leg.sid]) {
      assert.equal(terminal(sid).length, 1, `one terminal status callback for ${sid}`);
      assert.equal(terminal(sid)[0]!.json.data.reason_code, 'END.0502', JSON.stringify(terminal(sid)[0]!.json));
    }

    assert.equal(parent.reason_code, 'END.0502');
    assert.equal(parent.status, 'completed');
    assert.equal(leg.reason_code, 'END.0502', 'the dialled leg ends for the same reason');
    assert.equal(
      (await t.ctx.db('call_events').where({ call_id: parent.id, code: 'CALL.0300' })).length,
      1,
      'one terminal event',
    );
    // Billed to the moment the media stopped (± one 1-s increment), never to the BYE or after.
    const talkToKill = (killedAt - Date.parse(leg.answered_at)) / 1000;
    assert.ok(Math.abs(Date.parse(leg.ended_at) - killedAt) < 1000, `ended_at ${leg.ended_at} vs kill ${killedAt}`);
    const expectedCents = Math.ceil(talkToKill) * 100;
    assert.ok(
      Math.abs(Number(leg.cost_cents) - expectedCents) <= 100,
      `leg cost ${leg.cost_cents} for ${talkToKill.toFixed(2)} s of talk to the kill (expected ${expectedCents})`,
    );
    // And the engine is back for the next call.
    const deadline = Date.now() + 10000;
    while (!(await t.ctx.sw.health()).media && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.ok((await t.ctx.sw.health()).media, 'rtpengine healthy again');
  });

  it('a Say playing at the kill: the call is not left stuck, it ends within 5 s with END.0502', async () => {
    const deadline = Date.now() + 10000;
    while (!(await t.ctx.sw.health()).media && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const { caller, sid } = await callInSay(t, '<Pause length="30"/>');
    t.sipp = caller;
    const killedAt = Date.now();
    process.kill(supervisedEnginePid(t), 'SIGKILL');
    const code = await Promise.race([caller.exited, new Promise((r) => setTimeout(() => r('stuck'), 5000))]);
    assert.equal(code, 0, `the caller got BYE within 5 s (${String(code)}): ${caller.output()}`);
    const row = await t.ctx
      .db('calls')
      .where({ sid: await sid() })
      .first();
    assert.equal(row.reason_code, 'END.0502');
    assert.ok(Math.abs(Date.parse(row.ended_at) - killedAt) < 1000, `ended at the kill: ${row.ended_at}`);
  });
});

describe('e2e: the media engine dies under a bridged call, with Redis', function () {
  this.timeout(60000);
  const t = useCarrierSwitch({ did: DID, env: { SIMU_RTPENGINE_REDIS: 'auto' } });
  const CALLEE_MEDIA = nextPorts(2);
  const CALLER_MEDIA = nextPorts(4);
  let call: BridgedCall | undefined;

  afterEach(() => {
    call?.caller.kill();
    call?.callee.kill();
    call?.sink.close();
    call = undefined;
  });

  it('the restarted engine restores the call: the callee hears the caller again within 3 s, the call goes on', async () => {
    call = await bridgedCall(t, 10, CALLEE_MEDIA, CALLER_MEDIA);
    const pid = supervisedEnginePid(t);
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    await t.server.waitFor(() => call!.sink.firstLoudAfter(killedAt + 200) !== undefined, 8000, 'audio again');
    const gapMs = call.sink.firstLoudAfter(killedAt + 200)! - killedAt;
    console.log(`      the callee heard the caller again ${gapMs} ms after the kill`);
    assert.ok(gapMs <= 3000, `audio back after ${gapMs} ms`);
    // The call carried on to its Dial's time limit and ended normally, not for media failure.
    await t.server.waitFor(() => t.server.statusEvents().includes('CALL.0300'), 20000, 'CALL.0300');
    const { parent } = await rowsOfLastCall(t);
    assert.equal(parent.reason_code, 'END.0200');
  });

  it('a Say playing at the kill: the call goes on to its next verb (here a Hangup), never stuck', async () => {
    const { caller, sid } = await callInSay(t, '<Hangup/>');
    t.sipp = caller;
    process.kill(supervisedEnginePid(t), 'SIGKILL');
    const code = await Promise.race([caller.exited, new Promise((r) => setTimeout(() => r('stuck'), 30000))]);
    assert.equal(code, 0, `the caller got the Hangup's BYE (${String(code)}): ${caller.output()}`);
    const row = await t.ctx
      .db('calls')
      .where({ sid: await sid() })
      .first();
    assert.equal(row.status, 'completed');
    assert.equal(row.reason_code, 'END.0200', 'the document ran to its end');
  });
});
