import assert from 'node:assert/strict';
import { setRate } from '../../../store/index.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { api, carrierCallsDid, type SippRun } from '../support/harness.js';
import { Cluster, type ClusterNode } from '../support/cluster.js';

/**
 * Three switch processes (nodes) on one PostgreSQL, each writing its heartbeat: when one is SIGKILLed with calls
 * up, a survivor declares it gone and closes each of its calls exactly once (END.0504, billed, one call.completed
 * callback), the wallet falls by exactly their costs, and the calls the other two nodes hold go on untouched.
 */
describe('e2e: three nodes on one PostgreSQL, one killed with calls up', function () {
  this.timeout(120000);
  const DID = '+254711500001';
  const SINK = nextPorts(2);
  let cluster: Cluster;
  const sipps = new Map<string, SippRun>();

  before(async () => {
    cluster = await Cluster.start('kill', { env: { SIMU_NODE_GONE_AFTER_SECONDS: '4' } });
  });

  after(async () => {
    for (const s of sipps.values()) s.kill();
    await cluster?.stop();
  });

  it("a survivor closes each of the dead node's calls once; the wallet falls by their costs; the rest go on", async () => {
    const { db, server } = cluster;
    const [one, two, three] = [cluster.node(1), cluster.node(2), cluster.node(3)];
    await setRate(db, 'inbound', 6000); // 60.00 a minute, per second after the first minute
    server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    const acct = await cluster.account(DID, { voicePath: '/hold' });

    const up = await cluster.listing();
    assert.deepEqual(
      up.map((n) => [n.id, n.state]),
      cluster.nodes.map((n) => [n.id, 'up']),
    );

    // Two calls held by each node, from a carrier sending to all three.
    for (const n of cluster.nodes)
      sipps.set(n.id, carrierCallsDid({ sip: n.ports.sip, did: DID.slice(1), port: nextPort(), sink: SINK, calls: 2 }));
    await server.waitFor(() => server.statusEvents().filter((c) => c === 'CALL.0200').length === 6, 20000, 'answered');
    const calls = await db('calls').where({ account_id: acct.id }).select('id', 'sid', 'node_id', 'status');
    const held = (n: ClusterNode) => calls.filter((c) => c.node_id === n.id);
    for (const n of cluster.nodes)
      assert.deepEqual(
        held(n).map((c) => c.status),
        ['answered', 'answered'],
        `${n.id} holds two answered calls: ${JSON.stringify(calls)}`,
      );
    await eventually(
      async () => (await cluster.listing()).find((n) => n.id === two.id)?.live_calls === 2,
      `${two.id} counts 2`,
      5000,
    );
    await new Promise((r) => setTimeout(r, 2000)); // talk time to bill
    const balanceBefore = Number((await db('accounts').where({ id: acct.id }).first()).balance_cents);

    await cluster.kill(two);
    const dead = held(two);
    await server.waitFor(
      () => dead.every((c) => cluster.callbacks(c.sid, 'CALL.0300').length > 0),
      20000,
      "the dead node's calls closed",
    );
    await new Promise((r) => setTimeout(r, 3000)); // nothing more arrives
    const rows = await db('calls').whereIn(
      'id',
      dead.map((c) => c.id),
    );
    for (const r of rows) {
      assert.equal(r.status, 'completed');
      assert.equal(r.reason_code, 'END.0504');
      assert.equal(cluster.callbacks(r.sid, 'CALL.0300').length, 1, `one call.completed for ${r.sid}`);
      const ended = await db('call_events').where({ call_id: r.id, code: 'CALL.0300' });
      assert.equal(ended.length, 1, `one CALL.0300 stored for ${r.sid}`);
    }
    const costs = rows.reduce((s, r) => s + Number(r.cost_cents), 0);
    const debits = await db('wallet_transactions')
      .whereIn(
        'call_id',
        dead.map((c) => c.id),
      )
      .where({ direction: 'debit' });
    assert.equal(
      debits.reduce((s, d) => s + Number(d.amount_cents), 0),
      costs,
      'the ledger holds exactly their costs',
    );
    const balanceAfter = Number((await db('accounts').where({ id: acct.id }).first()).balance_cents);
    assert.ok(costs > 0, 'the talk time was billed');
    assert.equal(balanceBefore - balanceAfter, costs, 'the wallet fell by exactly their costs');
    const after = await cluster.listing();
    const gone = after.find((n) => n.id === two.id)!;
    assert.equal(gone.state, 'gone');
    assert.ok([one.id, three.id].includes(gone.gone_by!), `closed by a survivor, not ${gone.gone_by}`);
    for (const n of [one, three]) assert.equal(after.find((x) => x.id === n.id)!.state, 'up', `${n.id} is up`);

    // The survivors' calls went on: still answered, nothing reported; each is then hung up through node 1's API
    // (node 3's call handed to node 3) and ends as a normal hangup, its caller sent the BYE.
    const others = [...held(one), ...held(three)];
    const still = await db('calls').whereIn(
      'id',
      others.map((c) => c.id),
    );
    assert.deepEqual(
      still.map((c) => c.status),
      Array(4).fill('answered'),
      "the other nodes' calls are untouched",
    );
    for (const c of others) assert.equal(cluster.callbacks(c.sid, 'CALL.0300').length, 0, `${c.sid} not ended`);
    for (const c of others) {
      const res = await api(one.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid: c.sid });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    for (const n of [one, three]) {
      const s = sipps.get(n.id)!;
      assert.equal(await s.exited, 0, `${n.id}'s callers got their BYE: ${s.output()}`);
    }
    const ended = await db('calls').whereIn(
      'id',
      others.map((c) => c.id),
    );
    assert.deepEqual(
      ended.map((c) => [c.status, c.reason_code]),
      Array(4).fill(['completed', 'END.0200']),
    );
    await server.waitFor(
      () => others.every((c) => cluster.callbacks(c.sid, 'CALL.0300').length === 1),
      10000,
      'one call.completed each',
    );
    const final = Number((await db('accounts').where({ id: acct.id }).first()).balance_cents);
    const otherCosts = ended.reduce((s, r) => s + Number(r.cost_cents), 0);
    assert.equal(balanceAfter - final, otherCosts, 'the wallet then fell by exactly the other calls’ costs');
  });
  it('a node stalled past its heartbeat is taken over; when it resumes it ends the calls the store closed', async () => {
    const { db, server } = cluster;
    const [one, three] = [cluster.node(1), cluster.node(3)];
    const did = '+254711500011';
    server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    const acct = await cluster.account(did, { voicePath: '/hold' });
    const caller = carrierCallsDid({ sip: three.ports.sip, did: did.slice(1), port: nextPort(), sink: SINK, calls: 1 });
    sipps.set('stalled', caller);
    const call = await eventually(
      async () => db('calls').where({ account_id: acct.id, status: 'answered' }).first(),
      'the call answered on node 3',
      15000,
    );
    assert.equal(call.node_id, three.id);
    await new Promise((r) => setTimeout(r, 2000)); // talk time to bill

    // Stalled (as a node cut off from the store, or its event loop blocked) past node.goneAfterSeconds.
    three.sw!.proc.kill('SIGSTOP');
    try {
      await server.waitFor(() => cluster.callbacks(call.sid, 'CALL.0300').length > 0, 20000, 'the call closed');
      const gone = (await cluster.listing()).find((n) => n.id === three.id);
      assert.equal(gone?.state, 'gone');
      assert.ok(gone.gone_by && gone.gone_by !== three.id, `taken over by another node, not ${gone.gone_by}`);
    } finally {
      three.sw!.proc.kill('SIGCONT');
    }
    const resumed = Date.now();
    const closed = await db('calls').where({ id: call.id }).first();
    assert.deepEqual([closed.status, closed.reason_code], ['completed', 'END.0504']);
    // Resumed, node 3 learns at its next heartbeat that it was declared gone and ends the call: its caller gets the
    // BYE now, not when the call's 60-second document would have ended it.
    assert.equal(await caller.exited, 0, `the caller got node 3's BYE: ${caller.output()}`);
    assert.ok(Date.now() - resumed < 8000, `BYE ${Date.now() - resumed} ms after node 3 resumed`);
    await new Promise((r) => setTimeout(r, 2000)); // nothing more arrives
    assert.equal(cluster.callbacks(call.sid, 'CALL.0300').length, 1, 'one call.completed');
    const row = await db('calls').where({ id: call.id }).first();
    assert.deepEqual([row.status, row.reason_code, row.cost_cents], ['completed', 'END.0504', closed.cost_cents]);
    const debits = await db('wallet_transactions').where({ call_id: call.id, direction: 'debit' });
    assert.equal(debits.length, 1, 'billed once');
    const listing = await cluster.listing();
    assert.equal(listing.find((n) => n.id === three.id)?.state, 'up', 'node 3 joined again');
    assert.equal(listing.find((n) => n.id === one.id)?.state, 'up');
  });
});
