import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { setRate } from '../../../store/index.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { api, carrierCallsDid, type SippRun } from '../support/harness.js';
import { Cluster } from '../support/cluster.js';

/**
 * Three nodes on one PostgreSQL: a stream socket on node 1 sees the events of calls nodes 2 and 3 hold (relayed
 * through NOTIFY, 19 of 20 within 100 ms); an update sent to node 1's API moves a call node 3 holds, and a hangup
 * sent to node 1 ends it (node 3 sends the caller its BYE, the record completes, one CALL.0300).
 */
describe('e2e: three nodes on one PostgreSQL, calls reached from another node', function () {
  this.timeout(120000);
  const DID = '+254711500002';
  const CALLER = nextPort();
  const SINK = nextPorts(2);
  let cluster: Cluster;
  const sipps: SippRun[] = [];
  let ws: WebSocket | undefined;

  before(async () => {
    cluster = await Cluster.start('reach');
  });

  after(async () => {
    ws?.terminate();
    for (const s of sipps) s.kill();
    await cluster?.stop();
  });

  it("node 1's stream carries nodes 2 and 3's calls' events; a hangup sent to node 1 ends a call node 3 holds", async () => {
    const { db, server } = cluster;
    const [one, two, three] = [cluster.node(1), cluster.node(2), cluster.node(3)];
    await setRate(db, 'inbound', 600);
    server.verbs('/short', '<Response><Pause length="1"/><Hangup/></Response>');
    server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    const acct = await cluster.account(DID, { voicePath: '/short' });

    // A stream socket on node 1.
    const token = await api(one.baseUrl, acct.key, 'POST', '/api/stream/token');
    assert.equal(token.status, 200, JSON.stringify(token.body));
    const frames: Array<{ code: string; sid?: string; createdAt: string; receivedAt: number }> = [];
    ws = new WebSocket(`ws://127.0.0.1:${one.ports.http}/api/stream?token=${token.body.token}`);
    ws.on('message', (m) =>
      frames.push({ ...(JSON.parse(String(m)) as { code: string; createdAt: string }), receivedAt: Date.now() }),
    );
    await new Promise((resolve, reject) => ws!.once('open', resolve).once('error', reject));

    // Four short calls, one after another, two held by node 2 and two by node 3: their events reach node 1's socket.
    for (const n of [two, three, two, three]) {
      const s = carrierCallsDid({ sip: n.ports.sip, did: DID.slice(1), port: CALLER, sink: SINK, calls: 1 });
      sipps.push(s);
      assert.equal(await s.exited, 0, s.output());
    }
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0300').length === 4,
      15000,
      'four calls completed',
    );
    await new Promise((r) => setTimeout(r, 500));
    const held = await db('calls').where({ account_id: acct.id }).orderBy('created_at').select('id', 'sid', 'node_id');
    assert.deepEqual(
      held.map((c) => c.node_id),
      [two.id, three.id, two.id, three.id],
      'nodes 2 and 3 held them',
    );
    // Call events (WH.* delivery reports come from whichever node's outbox delivered the callback): for each call,
    // every event its node stored, once, in order.
    let seen = 0;
    for (const c of held) {
      const got = frames.filter((f) => f.sid === c.sid && !f.code.startsWith('WH.')).map((f) => f.code);
      const stored = await db('call_events').where({ call_id: c.id }).whereNot('code', 'like', 'WH.%').orderBy('id');
      assert.deepEqual(
        got,
        stored.map((e) => e.code),
        `node 1's socket saw every event ${c.node_id} stored for ${c.sid}, once, in order`,
      );
      assert.ok(got.includes('CALL.0200') && got.includes('CALL.0300'), got.join(' '));
      seen += got.length;
    }
    assert.ok(seen >= 20, `the socket on node 1 saw ${seen} events of the other nodes' calls`);
    const remote = frames.filter((f) => held.some((c) => c.sid === f.sid) && !f.code.startsWith('WH.'));
    const delays = remote.map((f) => f.receivedAt - Date.parse(f.createdAt)).sort((x, y) => x - y);
    const pct = (p: number) => delays[Math.min(delays.length - 1, Math.ceil((p / 100) * delays.length) - 1)]!;
    console.log(
      `    events of nodes 2 and 3's calls on node 1's stream: ${delays.length}, delay p50 ${pct(50)} ms, ` +
        `p95 ${pct(95)} ms, p99 ${pct(99)} ms`,
    );
    // Of 20 samples p99 is the slowest one, which on a shared, busy box is one scheduling hiccup of some process:
    // 19 of 20 within 100 ms, and none later than a second (none waited for a poll).
    assert.ok(pct(95) < 100, `p95 ${pct(95)} ms`);
    assert.ok(delays.at(-1)! < 1000, `slowest ${delays.at(-1)} ms`);

    // A call held by node 3, moved and hung up through node 1's API.
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/hold') });
    await new Promise((r) => setTimeout(r, 1500)); // the number's change reaches node 3's cache
    const caller = carrierCallsDid({ sip: three.ports.sip, did: DID.slice(1), port: CALLER, sink: SINK, calls: 1 });
    sipps.push(caller);
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0200').length === 5,
      15000,
      'the fifth call answered',
    );
    const call = await db('calls').where({ account_id: acct.id, status: 'answered' }).first();
    assert.equal(call.node_id, three.id);
    // An update sent to node 1 moves the call on node 3 (its verb document parsed on node 1, run on node 3).
    const moved = await api(one.baseUrl, acct.key, 'POST', `/api/calls/${call.id}/update`, {
      twiml: '<Response><Say>moved</Say><Pause length="60"/></Response>',
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    await server.waitFor(
      () => frames.some((f) => f.sid === call.sid && f.code === 'CALL.0210'),
      5000,
      "CALL.0210 on node 1's stream",
    );
    const res = await api(one.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid: call.sid });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, 'completed', JSON.stringify(res.body));
    assert.equal(res.body.reason_code, 'END.0200', 'ended by node 3 as a normal hangup, not reconciled');
    assert.equal(await caller.exited, 0, `the caller got node 3's BYE: ${caller.output()}`);
    await server.waitFor(() => cluster.callbacks(call.sid, 'CALL.0300').length > 0, 10000, 'CALL.0300');
    await new Promise((r) => setTimeout(r, 1500)); // nothing more arrives
    assert.equal(cluster.callbacks(call.sid, 'CALL.0300').length, 1, 'one CALL.0300');
    const row = await db('calls').where({ id: call.id }).first();
    assert.equal(row.status, 'completed');
    assert.equal(row.node_id, three.id);
  });
});
