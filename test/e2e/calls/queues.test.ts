import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { rms } from '../../../media/g711.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { toneAmplitude } from '../../support/tones.js';
import { eventually } from '../../support/wait.js';
import {
  AccountServer,
  SCENARIOS,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
  type SippRun,
} from '../support/harness.js';
import { RtpCapture, toneUlawFile, type HeardPacket } from '../support/rtp-capture.js';

const PORTS = allocateSwitchPorts();
const CARRIER = nextPort();

/** A copy of a speaking scenario with its file (and how long it talks before hanging up) written in. */
function scenario(name: string, ulaw: string, talkMs = 0): string {
  const file = path.join(path.dirname(ulaw), `${path.basename(ulaw)}-${name}`);
  const text = readFileSync(path.join(SCENARIOS, name), 'utf8');
  writeFileSync(file, text.replaceAll('[speech]', ulaw).replaceAll('[talk_ms]', String(talkMs)));
  return file;
}

/** Mean amplitude of `hz` over the packets in [from, to) (ms since the epoch). */
function amplitudeBetween(packets: HeardPacket[], hz: number, from: number, to: number): number {
  const inside = packets.filter((p) => p.at >= from && p.at < to);
  if (inside.length === 0) return 0;
  return inside.reduce((sum, p) => sum + toneAmplitude(p.samples, hz), 0) / inside.length;
}

/** Share of 20 ms packets in [from, to) whose RMS is above `threshold`: audio, not silence. */
function loudShare(packets: HeardPacket[], from: number, to: number, threshold = 300): number {
  const inside = packets.filter((p) => p.at >= from && p.at < to);
  return inside.length === 0 ? 0 : inside.filter((p) => rms(p.samples) > threshold).length / inside.length;
}

interface Leg {
  readonly sipp: SippRun;
  readonly capture: RtpCapture;
}

/**
 * Issue 18 item 2, done when: three callers queue; an agent dials the queue and gets the longest waiting one; the
 * others hear hold audio (energy in their RTP) and their position; QueueTime is right within a second. The agent
 * is a SIPp leg (not baresip): it calls a DID whose document is <Dial><Queue>. Every leg plays its own tone, so
 * who was bridged to whom is read from what each heard (Goertzel), captured on loopback with tcpdump.
 */
describe('e2e: Enqueue and Dial Queue with SIPp callers and a SIPp agent', function () {
  this.timeout(120000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  const server = new AccountServer();
  const legs: Leg[] = [];
  const DEFAULT_HOLD = '+254711900001';
  const WAIT_URL = '+254711900002';
  const AGENT = '+254711900003';
  let key = '';

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    const account = await createAccountWithDid(ctx.db, DEFAULT_HOLD);
    key = account.key;
    for (const did of [WAIT_URL, AGENT]) {
      await ctx.db('numbers').insert({
        id: `n-${did}`,
        number: did,
        account_id: account.id,
        is_active: true,
        acquired_at: new Date().toISOString(),
        created_at: new Date().toISOString(),
      });
    }
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
    server.verbs('/default', `<Response><Enqueue action="${server.url('/left')}">support</Enqueue></Response>`);
    server.verbs(
      '/waiturl',
      `<Response><Enqueue waitUrl="${server.url('/wait')}" action="${server.url('/left')}">support</Enqueue></Response>`,
    );
    server.routes.set('/wait', (r) => ({
      body: `<Response><Say>You are number ${r.json?.QueuePosition} in the queue.</Say><Pause length="1"/></Response>`,
    }));
    server.verbs('/left', '<Response><Hangup/></Response>');
    server.verbs('/moved', '<Response><Say>We will call you back.</Say><Hangup/></Response>');
    server.verbs('/agent', '<Response><Dial timeout="20"><Queue>support</Queue></Dial><Hangup/></Response>');
    for (const [did, hook] of [
      [DEFAULT_HOLD, '/default'],
      [WAIT_URL, '/waiturl'],
      [AGENT, '/agent'],
    ] as const) {
      await ctx
        .db('numbers')
        .where({ number: did })
        .update({ webhook_voice_inbound: server.url(hook) });
    }
  });

  after(async () => {
    for (const l of legs) {
      l.sipp.kill();
      l.capture.stop();
    }
    await server.close();
    await ctx?.sw.stop();
  });

  async function call(did: string, hz: number, scenarioName = 'uac-inbound-speaks.xml', talkMs = 0): Promise<Leg> {
    const media = nextPorts(4);
    const capture = await new RtpCapture(media).start();
    const sipp = carrierCallsDid({
      sip: PORTS.sip,
      did,
      port: nextPort(),
      sink: media,
      scenario: scenario(scenarioName, toneUlawFile(hz, 60), talkMs),
      extra: ['-mp', String(media)],
    });
    const leg = { sipp, capture };
    legs.push(leg);
    return leg;
  }

  const queueSize = async () =>
    (await api(ctx.baseUrl, key, 'GET', '/api/queues')).body.queues.find((q: any) => q.name === 'support')?.size ?? 0;
  const firstRequest = (url: string, n = 0) => server.requests.filter((r) => r.url === url)[n];

  it('the agent gets the longest-waiting caller; the others hold and hear their position; QueueTime is right', async () => {
    const a = await call(DEFAULT_HOLD, 440);
    await eventually(async () => (await queueSize()) === 1, 'caller A queued', 15000);
    const b = await call(WAIT_URL, 660);
    await eventually(async () => (await queueSize()) === 2, 'caller B queued', 15000);
    const c = await call(DEFAULT_HOLD, 880);
    await eventually(async () => (await queueSize()) === 3, 'caller C queued', 15000);
    const holdFrom = Date.now();
    await new Promise((r) => setTimeout(r, 4000));
    const holdTo = Date.now();

    // REST: the queue with its members, longest-waiting first.
    const aSid = firstRequest('/default').json.CallSid;
    const cSid = firstRequest('/default', 1).json.CallSid;
    const bSid = firstRequest('/waiturl').json.CallSid;
    const members = (await api(ctx.baseUrl, key, 'GET', '/api/queues/support/members')).body.members;
    assert.deepEqual(
      members.map((m: any) => [m.call_sid, m.position]),
      [
        [aSid, 1],
        [bSid, 2],
        [cSid, 3],
      ],
    );

    // The agent: plays 1000 Hz, talks 5 s once answered, hangs up.
    const agent = await call(AGENT, 1000, 'uac-inbound-speaks-bye.xml', 5000);
    assert.equal(await agent.sipp.exited, 0, agent.sipp.output());
    const agentAt = firstRequest('/agent').at;
    await eventually(() => firstRequest('/left'), "A's action after the bridge", 10000);
    const left = firstRequest('/left').json;
    assert.equal(left.CallSid, aSid, 'the longest-waiting caller was the one bridged');
    assert.equal(left.QueueResult, 'bridged');
    const expected = (agentAt - firstRequest('/default').at) / 1000;
    assert.ok(Math.abs(left.QueueTime - expected) <= 1, `QueueTime ${left.QueueTime} s, expected about ${expected}`);
    assert.equal(await a.sipp.exited, 0, a.sipp.output());

    // Who heard whom: the agent heard A's 440 Hz (not B's or C's); A heard the agent's 1000 Hz.
    const agentHeard = agent.capture.packets();
    const bridged = agentHeard.filter((p) => p.at > agentAt + 1000);
    const from = bridged[0]!.at;
    const to = from + 3000;
    const a440 = amplitudeBetween(agentHeard, 440, from, to);
    if (process.env.SIMU_TEST_FIGURES) {
      console.log({
        queueTime: left.QueueTime,
        expected,
        a440,
        a660: amplitudeBetween(agentHeard, 660, from, to),
        a880: amplitudeBetween(agentHeard, 880, from, to),
        aHears1000: amplitudeBetween(a.capture.packets(), 1000, from, to),
        bLoud: loudShare(b.capture.packets(), holdFrom, holdTo),
        cLoud: loudShare(c.capture.packets(), holdFrom, holdTo),
        cHold523: amplitudeBetween(c.capture.packets(), 523.25, holdFrom, holdTo),
      });
    }
    assert.ok(a440 > 1500, `the agent hears A's tone: ${a440}`);
    assert.ok(amplitudeBetween(agentHeard, 660, from, to) < a440 / 10, "not B's");
    assert.ok(amplitudeBetween(agentHeard, 880, from, to) < a440 / 10, "not C's");
    assert.ok(amplitudeBetween(a.capture.packets(), 1000, from, to) > 1500, "A hears the agent's tone");

    // The others held: audio in their RTP (B: its waitUrl's Say; C: the position spoken and the hold music).
    assert.ok(loudShare(b.capture.packets(), holdFrom, holdTo) > 0.3, 'B hears its wait document');
    assert.ok(loudShare(c.capture.packets(), holdFrom, holdTo) > 0.3, 'C hears the hold audio');
    const music = c.capture
      .packets()
      .filter(
        (p) => p.at >= holdFrom && [261.63, 329.63, 392, 523.25].some((hz) => toneAmplitude(p.samples, hz) > 2000),
      );
    assert.ok(music.length > 10, `C hears the hold music's notes (${music.length} packets)`);
    // B's waitUrl was told its position: 2 while A waited, 1 once A was taken.
    const positions = server.requests.filter((r) => r.url === '/wait').map((r) => r.json.QueuePosition);
    assert.equal(positions[0], 2);
    await eventually(
      () => server.requests.some((r) => r.url === '/wait' && r.json.QueuePosition === 1),
      'B told it is next',
      15000,
    );
    const joined = await ctx.db('call_events').where({ code: 'QUEUE.0100' }).select('data');
    assert.deepEqual(joined.map((r: any) => JSON.parse(r.data).position).sort(), [1, 2, 3]);

    // REST: B leaves the queue to another document; then the front one (C) too.
    const bUuid = (await api(ctx.baseUrl, key, 'GET', '/api/queues/support/members')).body.members[0].call_uuid;
    const moved = await api(ctx.baseUrl, key, 'POST', `/api/queues/support/members/${bUuid}/dequeue`, {
      url: server.url('/moved'),
    });
    assert.equal(moved.status, 204, JSON.stringify(moved.body));
    await eventually(() => firstRequest('/moved'), "B's new document", 10000);
    assert.equal(firstRequest('/moved').json.QueueResult, 'redirected');
    assert.equal(await b.sipp.exited, 0, b.sipp.output());
    const front = await api(ctx.baseUrl, key, 'POST', '/api/queues/support/members/front/dequeue', {
      url: server.url('/left'),
    });
    assert.equal(front.status, 204);
    assert.equal(await c.sipp.exited, 0, c.sipp.output());
    assert.deepEqual((await api(ctx.baseUrl, key, 'GET', '/api/queues')).body.queues, []);
    const none = await api(ctx.baseUrl, key, 'POST', '/api/queues/support/members/front/dequeue', {
      url: server.url('/left'),
    });
    assert.equal(none.status, 404);
  });
});
