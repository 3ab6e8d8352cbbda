import assert from 'node:assert/strict';
import { setRate } from '../../../store/index.js';
import { toneSeconds } from '../../support/tones.js';
import { eventually } from '../../support/wait.js';
import { Cluster } from '../support/cluster.js';
import { ToneCallers, heardSince, type ToneLeg } from '../support/conference-legs.js';
import { api } from '../support/harness.js';

const CALLER_TONES = [440, 660, 880] as const;
const AGENT_TONE = 1000;

/**
 * Three nodes on one PostgreSQL, one queue: callers enqueued on nodes 1, 2 and 3, in that order, wait in the queue
 * node 1 holds (the first caller's node took its lease; the others reached it through legs between the nodes). An
 * agent calling node 2 dequeues three times and gets them in the order they came (FIFO across nodes), each pair
 * hearing each other (tones, Goertzel). The queue's members read the same through any node's API. Then node 2,
 * holding the queue anew, drains with callers waiting: it keeps the queue (a caller of node 1 still joins it) until
 * they are dequeued, then exits. Then node 1, holding it again, is SIGKILLed while a caller of another node waits:
 * that caller's Enqueue ends with QueueResult system-shutdown (its action runs). Every call is billed once, one
 * record each.
 */
describe('e2e: one queue across three nodes', function () {
  this.timeout(240_000);
  const CALLER_DID = '+254711500043';
  const AGENT_DID = '+254711500044';
  const callers = new ToneCallers();
  let cluster: Cluster;

  before(async () => {
    cluster = await Cluster.start('queue', { env: { SIMU_NODE_GONE_AFTER_SECONDS: '4' } });
  });

  after(async () => {
    callers.remove();
    await cluster?.stop();
  });

  it('callers of three nodes are served in FIFO order by an agent of another node; the holder dies, billed once', async () => {
    const server = cluster.server;
    await setRate(cluster.db, 'inbound', 6000);
    const acct = await cluster.account(CALLER_DID, { voicePath: '/enqueue' });
    await cluster.db('numbers').insert({
      id: `n-${AGENT_DID}`,
      number: AGENT_DID,
      account_id: acct.id,
      is_active: true,
      acquired_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
      webhook_voice_inbound: server.url('/agent'),
    });
    server.verbs(
      '/enqueue',
      `<Response><Enqueue action="${server.url('/left')}" waitUrl="${server.url('/wait')}">support</Enqueue></Response>`,
    );
    server.verbs('/wait', '<Response><Pause length="2"/></Response>');
    server.verbs('/left', '<Response><Hangup/></Response>');
    server.verbs('/moved', '<Response><Hangup/></Response>');
    server.verbs('/drained', '<Response><Hangup/></Response>');
    server.verbs('/agent', '<Response><Dial timeout="20"><Queue>support</Queue></Dial><Hangup/></Response>');
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks and numbers within 2 s

    const [n1, n2, n3] = [cluster.node(1), cluster.node(2), cluster.node(3)];
    const members = async (via = n2) => {
      const r = await api(via.baseUrl, acct.key, 'GET', '/api/queues/support/members');
      return r.status === 200 ? (r.body.members as Array<{ call_sid: string; position: number }>) : [];
    };
    const waiting: ToneLeg[] = [];
    for (const [i, n] of [n1, n2, n3].entries()) {
      waiting.push(await callers.call({ sip: n.ports.sip, did: CALLER_DID, tone: CALLER_TONES[i]! }));
      await eventually(
        async () => (await members()).length === i + 1,
        `the ${CALLER_TONES[i]} Hz caller queued (through ${n.id})`,
        15_000,
      );
    }
    const rows = await cluster
      .db('calls')
      .where({ account_id: acct.id })
      .orderBy('created_at')
      .select('sid', 'node_id');
    assert.deepEqual(
      rows.map((r) => r.node_id),
      [n1.id, n2.id, n3.id],
      'each caller is held by the node it called',
    );
    const sids = rows.map((r) => r.sid as string);
    for (const via of [n1, n2, n3]) {
      assert.deepEqual(
        (await members(via)).map((m) => [m.call_sid, m.position]),
        sids.map((s, i) => [s, i + 1]),
        `the members as ${via.id}'s API lists them`,
      );
    }
    const list = (await api(n3.baseUrl, acct.key, 'GET', '/api/queues')).body.queues;
    assert.deepEqual(
      list.map((q: { name: string; size: number }) => [q.name, q.size]),
      [['support', 3]],
    );
    assert.deepEqual(await cluster.db('room_leases').where({ account_id: acct.id }).select('kind', 'name', 'node_id'), [
      { kind: 'queue', name: 'support', node_id: n1.id },
    ]);
    const waitPositions = server.requests.filter((r) => r.url === '/wait').map((r) => r.json?.QueuePosition);
    assert.ok(waitPositions.includes(3), `the third caller was told its place: ${JSON.stringify(waitPositions)}`);

    // The agent, on node 2, three times: each takes the caller that waited longest and the two hear each other.
    const report: string[] = [];
    let heardOk = true;
    for (const [i, caller] of waiting.entries()) {
      const agent = await callers.call({ sip: n2.ports.sip, did: AGENT_DID, tone: AGENT_TONE, staySeconds: 6 });
      await eventually(
        () => server.requests.filter((r) => r.url === '/left').length === i + 1,
        `the ${caller.tone} Hz caller's action after its bridge`,
        30_000,
      );
      const left = server.requests.filter((r) => r.url === '/left')[i]!.json!;
      assert.equal(left.CallSid, sids[i], `agent call ${i + 1} took the caller that came ${i + 1}`);
      assert.equal(left.QueueResult, 'bridged');
      const queued = server.requests.filter((r) => r.url === '/enqueue')[i]!.at;
      const taken = server.requests.filter((r) => r.url === '/agent')[i]!.at;
      const expected = (taken - queued) / 1000;
      assert.ok(
        Math.abs(Number(left.QueueTime) - expected) <= 2,
        `QueueTime ${left.QueueTime} s, about ${expected.toFixed(1)} s expected`,
      );
      const done = await Promise.race([agent.sipp.done, new Promise<undefined>((r) => setTimeout(r, 10_000))]);
      assert.equal(done?.code, 0, `the agent's call ${i + 1} ended:\n${agent.sipp.output()}`);
      const bridgedFrom = server.requests.filter((r) => r.url === '/agent')[i]!.at + 1500;
      const agentHeard = heardSince(agent, bridgedFrom);
      const callerHeard = heardSince(caller, bridgedFrom);
      const agentHears = toneSeconds(agentHeard, caller.tone, 2000);
      const callerHears = toneSeconds(callerHeard, AGENT_TONE, 2000);
      const others = CALLER_TONES.filter((t) => t !== caller.tone).map((t) => toneSeconds(agentHeard, t, 2000));
      report.push(
        `agent ${i + 1} hears ${caller.tone} Hz for ${agentHears} s (others ${others.join(', ')} s); ` +
          `the caller hears the agent for ${callerHears} s`,
      );
      if (agentHears < 2 || callerHears < 2 || others.some((s) => s > 0.5)) heardOk = false;
    }
    assert.ok(heardOk, report.join('\n'));
    for (const leg of waiting) {
      const r = await Promise.race([leg.sipp.done, new Promise<undefined>((r) => setTimeout(r, 10_000))]);
      assert.equal(r?.code, 0, `the ${leg.tone} Hz caller was hung up after its action:\n${leg.sipp.output()}`);
    }
    await eventually(
      async () => (await cluster.db('room_leases').where({ account_id: acct.id })).length === 0,
      'the queue ended: its lease is free',
      10_000,
    );

    // The holder drains: it keeps its queue (callers of other nodes still join it), exits once the last one left.
    const drainCallers: ToneLeg[] = [];
    for (const [i, n] of [n2, n3].entries()) {
      drainCallers.push(await callers.call({ sip: n.ports.sip, did: CALLER_DID, tone: CALLER_TONES[i]! }));
      await eventually(async () => (await members(n1)).length === i + 1, `caller ${i + 1} queued on node 2`, 15_000);
    }
    n2.sw!.proc.kill('SIGTERM');
    await eventually(
      async () => (await cluster.listing()).find((n) => n.id === n2.id)?.state === 'draining',
      'node 2 drains',
      10_000,
    );
    drainCallers.push(await callers.call({ sip: n1.ports.sip, did: CALLER_DID, tone: 880 }));
    await eventually(
      async () => (await members(n1)).length === 3,
      "node 1's caller joined the draining holder's queue",
      15_000,
    );
    assert.deepEqual(await cluster.db('room_leases').where({ account_id: acct.id }).select('node_id'), [
      { node_id: n2.id },
    ]);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(n2.sw!.proc.exitCode, null, 'the draining holder stays while callers wait in its queue');
    for (let i = 0; i < 3; i++) {
      const out = await api(n3.baseUrl, acct.key, 'POST', '/api/queues/support/members/front/dequeue', {
        url: server.url('/drained'),
      });
      assert.equal(out.status, 204, JSON.stringify(out.body));
    }
    for (const leg of drainCallers) {
      const done = await Promise.race([leg.sipp.done, new Promise<undefined>((r) => setTimeout(r, 10_000))]);
      assert.equal(
        done?.code,
        0,
        `a caller of the drained queue was hung up by its new document:\n${leg.sipp.output()}`,
      );
    }
    const exited = await Promise.race([
      cluster.exited(n2),
      new Promise<string>((r) => setTimeout(r, 15_000, 'running')),
    ]);
    assert.equal(exited, 0, 'the drained holder exits once its queue is empty');
    assert.deepEqual(await cluster.db('room_leases').where({ account_id: acct.id }), [], 'its lease freed');
    await cluster.startNode(n2);

    // The holder dies with a caller of another node waiting: that caller leaves with QueueResult system-shutdown.
    const first = await callers.call({ sip: n1.ports.sip, did: CALLER_DID, tone: 440 });
    await eventually(async () => (await members()).length === 1, 'a caller queued on node 1', 15_000);
    const second = await callers.call({ sip: n3.ports.sip, did: CALLER_DID, tone: 660 });
    await eventually(async () => (await members()).length === 2, 'a caller of node 3 queued on node 1', 15_000);
    const secondSid = (await cluster.db('calls').where({ account_id: acct.id }).orderBy('created_at', 'desc').first())
      .sid;
    // A caller of node 2 dequeued through node 3's API: it leaves the queue node 1 holds for the URL given.
    const third = await callers.call({ sip: n2.ports.sip, did: CALLER_DID, tone: 880 });
    await eventually(async () => (await members()).length === 3, 'a caller of node 2 queued on node 1', 15_000);
    const thirdSid = (await members(n3))[2]!.call_sid;
    const thirdUuid = (await cluster.db('calls').where({ sid: thirdSid }).first()).id;
    const moved = await api(n3.baseUrl, acct.key, 'POST', `/api/queues/support/members/${thirdUuid}/dequeue`, {
      url: server.url('/moved'),
    });
    assert.equal(moved.status, 204, JSON.stringify(moved.body));
    await eventually(() => server.requests.some((r) => r.url === '/moved'), "the dequeued caller's URL", 10_000);
    const movedReq = server.requests.find((r) => r.url === '/moved')!.json!;
    assert.deepEqual([movedReq.CallSid, movedReq.QueueResult], [thirdSid, 'redirected']);
    const t = await Promise.race([third.sipp.done, new Promise<undefined>((r) => setTimeout(r, 10_000))]);
    assert.equal(t?.code, 0, `the dequeued caller was hung up by its new document:\n${third.sipp.output()}`);
    const still = (await members(n1)).map((m) => [m.call_sid, m.position]);
    assert.deepEqual(still.slice(1), [[secondSid, 2]], `the two others wait on: ${JSON.stringify(still)}`);
    await cluster.kill(n1);
    await eventually(
      () => server.requests.some((r) => r.url === '/left' && r.json?.CallSid === secondSid),
      "the waiting caller's action once the holder died",
      20_000,
    );
    const after = server.requests.find((r) => r.url === '/left' && r.json?.CallSid === secondSid)!.json!;
    assert.equal(after.QueueResult, 'system-shutdown');
    const r = await Promise.race([second.sipp.done, new Promise<undefined>((r) => setTimeout(r, 10_000))]);
    assert.equal(r?.code, 0, `node 3's caller was hung up by its action's document:\n${second.sipp.output()}`);
    first.sipp.kill();

    await eventually(
      async () =>
        (await cluster.db('calls').where({ account_id: acct.id }).whereNot({ status: 'completed' })).length === 0,
      'every call completed (node 1 taken over)',
      30_000,
    );
    const all = await cluster.db('calls').where({ account_id: acct.id }).orderBy('created_at');
    assert.equal(all.length, 12, 'one record per call: 9 callers, 3 agent calls; the legs between nodes are none');
    assert.equal(all.filter((c) => c.reason_code === 'END.0504').length, 1, "node 1's waiting caller, taken over");
    await new Promise((r) => setTimeout(r, 2000)); // nothing more is billed
    for (const c of all) {
      const debits = await cluster.db('wallet_transactions').where({ call_id: c.id, direction: 'debit' });
      const billed = debits.reduce((s, d) => s + Number(d.amount_cents), 0);
      assert.equal(billed, Number(c.cost_cents), `call ${c.sid}: the ledger holds its cost once`);
      assert.ok(Number(c.cost_cents) > 0, `call ${c.sid} was billed`);
    }
    const leftEvents = await cluster.db('call_events').where({ code: 'QUEUE.0300' }).select('call_id');
    const perCall = new Map<string, number>();
    for (const e of leftEvents) perCall.set(e.call_id, (perCall.get(e.call_id) ?? 0) + 1);
    assert.ok(
      [...perCall.values()].every((n) => n === 1),
      `each caller left its queue once: ${JSON.stringify([...perCall])}`,
    );
  });
});
