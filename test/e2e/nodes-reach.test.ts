import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { setRate, type Db } from '../../store/index.js';
import { nextPort, nextPorts } from '../support/ports.js';
import {
  AccountServer,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrierCallsDid,
  createAccountWithDid,
  type SippRun,
} from './harness.js';
import { freshPostgresStore, killSwitch, processEnv, startSwitch, type SwitchProcess } from './switch-process.js';

/**
 * Two nodes on one PostgreSQL: a stream socket on node A sees the events of calls node B holds (relayed through
 * NOTIFY, within 100 ms at p99); an update sent to A's API moves a call B holds, and a hangup sent to A ends it
 * (B sends the caller its BYE, the record completes, one CALL.0300).
 */
describe('e2e: two nodes on one PostgreSQL, a call reached from the other node', function () {
  this.timeout(120000);
  const DID = '+254711500002';
  const server = new AccountServer();
  const nodes: Array<{ id: string; ports: ReturnType<typeof allocateSwitchPorts>; sw?: SwitchProcess }> = [
    { id: 'reach-a', ports: allocateSwitchPorts() },
    { id: 'reach-b', ports: allocateSwitchPorts() },
  ];
  const CALLER = nextPort();
  const SINK = nextPorts(2);
  let url: string;
  let db: Db;
  const sipps: SippRun[] = [];
  let ws: WebSocket | undefined;

  const envOf = (n: (typeof nodes)[number]) =>
    processEnv(n.ports, {
      SIMU_DATABASE_URL: url,
      SIMU_NODE_ID: n.id,
    });

  before(async () => {
    await server.listen();
    ({ url, db } = await freshPostgresStore('simu_reach')); // migrated once, before the nodes start
  });

  after(async () => {
    ws?.terminate();
    for (const s of sipps) s.kill();
    for (const n of nodes) {
      await killSwitch(n.sw, n.ports.ng);
    }
    await db?.destroy();
    await server.close();
  });

  it("A's stream carries B's calls' events; a hangup sent to A ends a call B holds", async () => {
    for (const n of nodes) n.sw = await startSwitch(envOf(n));
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const baseA = `http://127.0.0.1:${a.ports.http}`;
    await setRate(db, 'inbound', 600);
    const acct = await createAccountWithDid(db, DID);
    await db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/short') });
    server.verbs('/short', '<Response><Pause length="1"/><Hangup/></Response>');
    server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    await addCarrier(db, nextPort());
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks within 2 s

    // A stream socket on node A.
    const token = await api(baseA, acct.key, 'POST', '/api/stream/token');
    assert.equal(token.status, 200, JSON.stringify(token.body));
    const frames: Array<{ code: string; sid?: string; createdAt: string; receivedAt: number }> = [];
    ws = new WebSocket(`ws://127.0.0.1:${a.ports.http}/api/stream?token=${token.body.token}`);
    ws.on('message', (m) =>
      frames.push({ ...(JSON.parse(String(m)) as { code: string; createdAt: string }), receivedAt: Date.now() }),
    );
    await new Promise((resolve, reject) => ws!.once('open', resolve).once('error', reject));

    // Four short calls held by node B, one after another: their events reach A's socket.
    for (let i = 0; i < 4; i++) {
      const s = carrierCallsDid({ sip: b.ports.sip, did: DID.slice(1), port: CALLER, sink: SINK, calls: 1 });
      sipps.push(s);
      assert.equal(await s.exited, 0, s.output());
    }
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0300').length === 4,
      15000,
      'four calls completed',
    );
    await new Promise((r) => setTimeout(r, 500));
    const held = await db('calls').where({ account_id: acct.id }).select('sid', 'node_id');
    assert.deepEqual(new Set(held.map((c) => c.node_id)), new Set(['reach-b']), 'node B held them');
    // Call events (WH.* delivery reports come from whichever node's outbox delivered the callback).
    const fromB = frames.filter((f) => held.some((c) => c.sid === f.sid) && !f.code.startsWith('WH.'));
    const stored = await db('call_events')
      .whereIn('call_id', db('calls').where({ account_id: acct.id }).select('id'))
      .whereNot('code', 'like', 'WH.%')
      .orderBy('id');
    assert.ok(fromB.length >= 20, `the socket on A saw ${fromB.length} events of B's calls`);
    assert.deepEqual(
      fromB.map((f) => f.code),
      stored.map((e) => e.code),
      "every event B stored, once, in order: A's socket missed none",
    );
    assert.ok(
      fromB.some((f) => f.code === 'CALL.0200') && fromB.filter((f) => f.code === 'CALL.0300').length === 4,
      fromB.map((f) => f.code).join(' '),
    );
    const delays = fromB.map((f) => f.receivedAt - Date.parse(f.createdAt)).sort((x, y) => x - y);
    const pct = (p: number) => delays[Math.min(delays.length - 1, Math.ceil((p / 100) * delays.length) - 1)]!;
    console.log(
      `    events of node B's calls on node A's stream: ${delays.length}, delay p50 ${pct(50)} ms, p99 ${pct(99)} ms`,
    );
    assert.ok(pct(99) < 100, `p99 ${pct(99)} ms`);

    // A call held by node B, hung up through node A's API.
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/hold') });
    await new Promise((r) => setTimeout(r, 1500)); // the number's change reaches B's cache
    const caller = carrierCallsDid({ sip: b.ports.sip, did: DID.slice(1), port: CALLER, sink: SINK, calls: 1 });
    sipps.push(caller);
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0200').length === 5,
      15000,
      'the fifth call answered',
    );
    const call = await db('calls').where({ account_id: acct.id, status: 'answered' }).first();
    assert.equal(call.node_id, 'reach-b');
    // An update sent to A moves the call on B (its verb document parsed on A, run on B).
    const moved = await api(baseA, acct.key, 'POST', `/api/calls/${call.id}/update`, {
      twiml: '<Response><Say>moved</Say><Pause length="60"/></Response>',
    });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    await server.waitFor(
      () => frames.some((f) => f.sid === call.sid && f.code === 'CALL.0210'),
      5000,
      "CALL.0210 on A's stream",
    );
    const res = await api(baseA, acct.key, 'POST', '/api/calls/hangup', { sid: call.sid });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, 'completed', JSON.stringify(res.body));
    assert.equal(res.body.reason_code, 'END.0200', 'ended by B as a normal hangup, not reconciled');
    assert.equal(await caller.exited, 0, `the caller got B's BYE: ${caller.output()}`);
    await server.waitFor(
      () => server.requests.some((q) => q.json?.sid === call.sid && q.json?.code === 'CALL.0300'),
      10000,
      'CALL.0300',
    );
    await new Promise((r) => setTimeout(r, 1500)); // nothing more arrives
    const reports = server.requests.filter((q) => q.json?.sid === call.sid && q.json?.code === 'CALL.0300');
    assert.equal(new Set(reports.map((q) => q.json.id)).size, 1, 'one CALL.0300');
    const row = await db('calls').where({ id: call.id }).first();
    assert.equal(row.status, 'completed');
    assert.equal(row.node_id, 'reach-b');
  });
});
