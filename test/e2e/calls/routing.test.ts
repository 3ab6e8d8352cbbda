import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { mintStaffStreamToken } from '../../../events/index.js';
import { insertRoute, setTrunkOptions, type TrunkRow } from '../../../store/index.js';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  RtpSink,
  carrier,
  api,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';

/**
 * Issue 17 "done when" (items 1-3): least-cost routing with failover across three SIPp carriers, no failover on a
 * callee's answer (486), and a trunk whose OPTIONS go unanswered marked down, skipped at once, and back up when it
 * answers again.
 */
describe('e2e: routes, failover and trunk health with SIPp carriers', function () {
  this.timeout(90000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();
  const sink = new RtpSink();
  const sipps: SippRun[] = [];
  const sockets: WebSocket[] = [];
  const SINK = nextPort();

  const route = async (prefix: string, trunk: TrunkRow, priority: number, buy = 50) => {
    await insertRoute(ctx.db, { prefix, trunk_id: trunk.id, priority, weight: 1, buy_rate_cents: buy });
    ctx.sw.sip!.trunks.invalidate(); // as `simu routes add` is seen within 2 s, but at once
  };
  const attempts = async (uuid: string) =>
    (await ctx.db('call_events').where({ call_id: uuid, code: 'ROUTE.0100' }).orderBy('created_at')).map((e) =>
      JSON.parse(e.data),
    );
  const originate = async (to: string) => {
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to,
      from: acct.did,
      url: server.url('/voice'),
      timeout: 20,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.uuid as string;
  };
  const callOf = async (uuid: string) => (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body;

  before(async () => {
    ctx = await startTestSwitch({
      env: {
        SIMU_ROUTING_ATTEMPT_TIMEOUT: '2',
        SIMU_ROUTING_PING_INTERVAL: '1',
        SIMU_ROUTING_PING_DOWN_AFTER: '2',
        SIMU_ROUTING_PING_UP_AFTER: '2',
      },
    });
    await server.listen();
    await sink.bind(SINK);
    acct = await createAccountWithDid(ctx.db, '+254711700001');
    server.verbs('/voice', '<Response><Pause length="1"/><Hangup/></Response>');
  });

  after(async () => {
    for (const s of sipps) s.kill();
    for (const s of sockets) s.terminate();
    sink.close();
    await server.close();
    await ctx?.sw.stop();
  });

  it('503 (Retry-After), then silence, then an answer: the call completes on the third with three attempts', async () => {
    const [p503, pSilent, pAnswer] = [nextPort(), nextPort(), nextPort()];
    const t503 = await addCarrier(ctx.db, p503, 'c503', ctx.sw);
    const tSilent = await addCarrier(ctx.db, pSilent, 'csilent', ctx.sw);
    const tAnswer = await addCarrier(ctx.db, pAnswer, 'canswer', ctx.sw);
    await route('2547', t503, 0);
    await route('2547', tSilent, 1);
    await route('254', tAnswer, 0);
    sipps.push(carrier({ port: p503, scenario: 'uas-503-retry-after.xml' }));
    sipps.push(carrier({ port: pSilent, scenario: 'uas-silent.xml' }));
    const answering = carrier({ port: pAnswer, sink: SINK });
    sipps.push(answering);
    await Promise.all([waitForBound(p503), waitForBound(pSilent), waitForBound(pAnswer)]);
    // Both transports of the account's events: its stream and its status callbacks.
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    const token = await api(ctx.baseUrl, acct.key, 'POST', '/api/stream/token');
    const stream = new WebSocket(`${ctx.baseUrl.replace('http', 'ws')}/api/stream?token=${token.body.token}`);
    sockets.push(stream);
    const frames: Array<{ code: string; data: Record<string, unknown> }> = [];
    stream.on('message', (m) => frames.push(JSON.parse(String(m))));
    await new Promise((resolve, reject) => stream.once('open', resolve).once('error', reject));

    const started = Date.now();
    const uuid = await originate('+254722000001');
    await eventually(async () => (await callOf(uuid)).status === 'completed', 'the call completed', 30000);
    const call = await callOf(uuid);
    assert.equal(call.reason_code, 'END.0200');
    assert.equal(await answering.exited, 0, answering.output());
    const tried = await attempts(uuid);
    assert.deepEqual(
      tried.map((a) => [a.attempt, a.trunk, a.sipStatus ?? null, a.outcome, a.failover]),
      [
        [1, 'c503', 503, 'rejected', true],
        [2, 'csilent', null, 'silent', true],
        [3, 'canswer', 200, 'answered', false],
      ],
      JSON.stringify(tried),
    );
    assert.equal(tried[0].retryAfterSeconds, 30);
    // The trunk's SIP status reaches both transports under the same name; the status callback's call snapshot
    // (whose `status` is the call's) leaves it alone.
    const routeAttempts = () => server.requests.filter((r) => r.url === '/status' && r.json?.code === 'ROUTE.0100');
    await server.waitFor(() => routeAttempts().length === 3, 10000, 'three ROUTE.0100 status callbacks');
    stream.close();
    const onStream = frames.filter((f) => f.code === 'ROUTE.0100').map((f) => f.data.sipStatus ?? null);
    const called = routeAttempts().map((r) => r.json.data);
    assert.deepEqual(onStream, [503, null, 200], JSON.stringify(frames));
    assert.deepEqual(
      called.map((d) => d.sipStatus ?? null),
      [503, null, 200],
      JSON.stringify(called),
    );
    for (const d of called)
      assert.ok(['initiated', 'ringing', 'answered'].includes(d.status), `the call's: ${d.status}`);
    // Within the call's own timeout: the silent trunk cost routing.attemptTimeoutSeconds (2 s), not timer B (32 s).
    assert.ok(Date.now() - started < 15000, `${Date.now() - started} ms`);
    // The 503's Retry-After holds c503 down: the next plan for the number skips it without a packet.
    const plan = await ctx.sw.sip!.trunks.outboundPlan('+254722000002');
    assert.deepEqual(
      plan.targets.map((t) => t.trunk.name),
      ['csilent', 'canswer'],
    );
    assert.ok(plan.skipped.some((s) => s.trunk?.name === 'c503' && s.reason === 'trunk-down'));
  });

  it('a 486 from the first trunk ends the call as busy: no failover', async () => {
    const [pBusy, pOther] = [nextPort(), nextPort()];
    const tBusy = await addCarrier(ctx.db, pBusy, 'cbusy', ctx.sw);
    const tOther = await addCarrier(ctx.db, pOther, 'cother', ctx.sw);
    await route('2557', tBusy, 0);
    await route('2557', tOther, 1);
    const busy = carrier({ port: pBusy, scenario: 'uas-busy.xml' });
    sipps.push(busy);
    const other = carrier({ port: pOther, sink: SINK });
    sipps.push(other);
    await Promise.all([waitForBound(pBusy), waitForBound(pOther)]);
    const uuid = await originate('+255722000001');
    await eventually(async () => (await callOf(uuid)).status === 'failed', 'the call failed', 20000);
    assert.equal((await callOf(uuid)).reason_code, 'END.0486');
    assert.equal(await busy.exited, 0, busy.output());
    const tried = await attempts(uuid);
    assert.deepEqual(
      tried.map((a) => [a.trunk, a.sipStatus, a.failover]),
      [['cbusy', 486, false]],
    );
    other.kill();
    assert.doesNotMatch(other.output(), /INVITE\s*-+>\s*[1-9]/, 'the second carrier never got an INVITE');
  });

  it("a Dial <Number> leg fails over too: a 500 from the first trunk, answered by the second, attempts on the leg's CDR", async () => {
    const [pFirst, pFail, pLeg] = [nextPort(), nextPort(), nextPort()];
    const tFirst = await addCarrier(ctx.db, pFirst, 'cparent', ctx.sw);
    const tFail = await addCarrier(ctx.db, pFail, 'cfail', ctx.sw);
    const tLeg = await addCarrier(ctx.db, pLeg, 'cleg', ctx.sw);
    await route('2507', tFirst, 0); // the originated call
    await route('2609', tFail, 0); // the Dial's number: cfail first, then cleg
    await route('2609', tLeg, 1);
    server.verbs('/dial', '<Response><Dial timeLimit="1"><Number>+260977000001</Number></Dial><Hangup/></Response>');
    const parent = carrier({ port: pFirst, sink: SINK });
    const failing = carrier({ port: pFail, scenario: 'uas-500.xml' });
    const leg = carrier({ port: pLeg, sink: SINK });
    sipps.push(parent, failing, leg);
    await Promise.all([waitForBound(pFirst), waitForBound(pFail), waitForBound(pLeg)]);
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+250788000001',
      from: acct.did,
      url: server.url('/dial'),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const uuid = res.body.uuid as string;
    await eventually(async () => (await callOf(uuid)).status === 'completed', 'the call completed', 30000);
    assert.equal(await leg.exited, 0, leg.output());
    assert.equal(await failing.exited, 0, failing.output());
    const child = await ctx.db('calls').where({ parent_call_id: uuid }).first();
    assert.equal(child.status, 'completed');
    assert.deepEqual(
      (await attempts(child.id)).map((a) => [a.trunk, a.sipStatus, a.failover]),
      [
        ['cfail', 500, true],
        ['cleg', 200, false],
      ],
    );
    assert.deepEqual(
      (await attempts(uuid)).map((a) => a.trunk),
      ['cparent'],
    );
  });

  it('a trunk whose OPTIONS go unanswered is marked down, skipped without delay, and comes back', async () => {
    const staff = new WebSocket(
      `${ctx.baseUrl.replace('http', 'ws')}/api/stream?token=${encodeURIComponent((await mintStaffStreamToken(ctx.db)).token)}`,
    );
    const frames: Array<{ code: string; data: Record<string, unknown> }> = [];
    staff.on('message', (m) => frames.push(JSON.parse(String(m))));
    await new Promise((resolve, reject) => staff.once('open', resolve).once('error', reject));
    try {
      const [pDead, pLive] = [nextPort(), nextPort()];
      const tDead = await addCarrier(ctx.db, pDead, 'cdead', ctx.sw); // nothing listens there yet
      const tLive = await addCarrier(ctx.db, pLive, 'clive', ctx.sw);
      await setTrunkOptions(ctx.db, 'cdead', { options_ping: true });
      ctx.sw.sip!.trunks.invalidate();
      await route('256', tDead, 0);
      await route('256', tLive, 1);
      const health = async () => (await ctx.db('trunks').where({ id: tDead.id }).first()).health;
      await eventually(async () => (await health()) === 'down', 'cdead marked down', 15000);
      await eventually(
        () => frames.some((f) => f.code === 'TRUNK.0100' && f.data.trunk === 'cdead' && f.data.health === 'down'),
        'TRUNK.0100 down on the staff stream',
        5000,
      );

      const live = carrier({ port: pLive, sink: SINK });
      sipps.push(live);
      await waitForBound(pLive);
      const started = Date.now();
      const uuid = await originate('+256700000001');
      await eventually(async () => (await callOf(uuid)).answered_at, 'the call answered', 10000);
      const waited = Date.now() - started;
      assert.ok(waited < 1500, `answered ${waited} ms after the request: the down trunk was not tried`);
      assert.deepEqual(
        (await attempts(uuid)).map((a) => a.trunk),
        ['clive'],
      );

      // The carrier answers OPTIONS again: after routing.pingUpAfter answers it is up and first in the plan.
      const pongs = carrier({ port: pDead, scenario: 'uas-options-ok.xml', calls: 1000 });
      sipps.push(pongs);
      await eventually(async () => (await health()) === 'up', 'cdead back up', 15000);
      const frame = (health: string) => () =>
        frames.some((f) => f.code === 'TRUNK.0100' && f.data.trunk === 'cdead' && f.data.health === health);
      await eventually(frame('up'), 'TRUNK.0100 up on the staff stream', 5000);
      const plan = await ctx.sw.sip!.trunks.outboundPlan('+256700000002');
      assert.equal(plan.targets[0].trunk.name, 'cdead');
    } finally {
      staff.close();
    }
  });
});
