import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort, nextPorts } from '../../support/ports.js';
import { traceCounts } from '../../support/sipp.js';
import { eventually } from '../../support/wait.js';
import { runSipp, SCENARIOS, type SippRun } from '../support/harness.js';
import { Cluster, type ClusterNode } from '../support/cluster.js';

const FAILOVER = 'uac-inbound-failover.xml';

/**
 * A node drained (SIGTERM) while a carrier sends 20 calls/s of 20-second calls to three nodes: no call is cut; the
 * node refuses new calls with 503 + Retry-After and the carrier places each of them on another node; the node exits
 * once its last call has ended.
 *
 * The carrier is three SIPp UACs, one a node, 20 calls every 3 s each, with a scenario that on a 503 carrying
 * Retry-After acknowledges it and offers the call to its second destination (the next node), as a carrier with
 * several destinations for a number fails over: SIPp cannot pick a destination by itself, so each UAC is told
 * its second one (-key alt_port).
 */
describe('e2e: three nodes on one PostgreSQL, one drained under 20 calls/s of 20-second calls', function () {
  this.timeout(240000);
  const DID = '+254711500003';
  const CALLS_PER_NODE = 80; // 12 s of load, 5 of them before the SIGTERM
  const TALK_SECONDS = 20;
  const SINK = nextPorts(2);
  let cluster: Cluster;
  const sipps: SippRun[] = [];

  before(async () => {
    // Each node's rtpengine has ports for a few hundred calls at once.
    cluster = await Cluster.start('drain', { rtpPorts: 1000 });
  });

  after(async () => {
    for (const s of sipps) s.kill();
    await cluster?.stop();
  });

  /** A carrier UAC sending to `to`, failing over to `alt`, 20 calls every 3 s; its counts file goes in `dir`. */
  function carrierTo(to: ClusterNode, alt: ClusterNode, dir: string): SippRun {
    const s = runSipp(
      [
        `127.0.0.1:${to.ports.sip}`,
        ...['-sf', path.join(SCENARIOS, FAILOVER), '-s', DID.slice(1)],
        ...['-key', 'media_sink', String(SINK), '-key', 'alt_port', String(alt.ports.sip)],
        ...['-i', '127.0.0.1', '-p', String(nextPort()), '-r', '20', '-rp', '3000', '-m', String(CALLS_PER_NODE)],
        ...['-l', '1000', '-trace_counts', '-timeout', '120s'],
      ],
      { cwd: dir, limitMs: 150_000 },
    );
    sipps.push(s);
    return s;
  }

  it('no call is cut; new calls get 503 + Retry-After and are answered on another node; the node exits after its last call', async () => {
    const { db, server } = cluster;
    const [one, two, three] = [cluster.node(1), cluster.node(2), cluster.node(3)];
    server.verbs('/twenty', `<Response><Pause length="${TALK_SECONDS}"/><Hangup/></Response>`);
    const acct = await cluster.account(DID, { voicePath: '/twenty', balanceCents: 10_000_000 });

    const dirs = cluster.nodes.map(() => mkdtempSync(path.join(os.tmpdir(), 'cluster-drain-')));
    const uacs = cluster.nodes.map((n, i) => carrierTo(n, cluster.nodes[(i + 1) % 3]!, dirs[i]!));
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 5000));

    // SIGTERM node 2 with its calls up and new ones arriving.
    const drainedAt = new Date().toISOString();
    let exitedAt = 0;
    const exited = cluster.exited(two).then((code) => ((exitedAt = Date.now()), code));
    two.sw!.proc.kill('SIGTERM');
    const health = await eventually(
      async () => {
        const r = await fetch(`${two.baseUrl}/api/health/`);
        return r.status === 503 ? r : undefined;
      },
      'node 2 answers health with 503',
      5000,
    );
    assert.deepEqual(await health.json(), { status: 'draining' });
    const refusedApi = await fetch(`${two.baseUrl}/api/calls/originate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+254722000101', from: DID, url: server.url('/twenty') }),
    });
    assert.equal(refusedApi.status, 503);
    assert.ok(Number(refusedApi.headers.get('retry-after')) > 0, 'Retry-After');
    assert.equal(((await refusedApi.json()) as { code?: string }).code, 'PLATFORM.0503');

    // Every UAC's calls were answered (on its node or, refused there, on the next) and ended by the switch's BYE.
    for (const [i, s] of uacs.entries())
      assert.equal(await s.exited, 0, `node ${i + 1}'s carrier: every call answered and ended\n${s.output()}`);
    const code = await exited;
    assert.equal(code, 0, 'node 2 exited cleanly');
    console.log(
      `    load ${((Date.now() - started) / 1000).toFixed(0)} s; node 2 exited ${((exitedAt - Date.parse(drainedAt)) / 1000).toFixed(1)} s after its SIGTERM`,
    );

    const reoffered = traceCounts(dirs[1]!, FAILOVER).get('503_Recv') ?? 0;
    for (const d of [dirs[0]!, dirs[2]!])
      assert.equal(traceCounts(d, FAILOVER).get('503_Recv') ?? 0, 0, 'only node 2 refused calls');
    assert.ok(reoffered > 0, 'node 2 refused the calls offered after its SIGTERM');

    const calls = await db('calls')
      .where({ account_id: acct.id, direction: 'inbound' })
      .select('sid', 'node_id', 'status', 'reason_code', 'talk_seconds', 'created_at', 'ended_at');
    const on = (n: ClusterNode, status: string) => calls.filter((c) => c.node_id === n.id && c.status === status);
    // No call cut: every call answered ran its 20 seconds and ended as a normal hangup.
    const completed = calls.filter((c) => c.status === 'completed');
    assert.equal(completed.length, 3 * CALLS_PER_NODE, 'each offered call answered once, somewhere');
    const cut = completed.filter((c) => c.reason_code !== 'END.0200' || Number(c.talk_seconds) < TALK_SECONDS);
    assert.deepEqual(cut, [], 'no call cut');
    // Node 2 answered only calls that came before its SIGTERM; the rest it refused, and node 3 answered them.
    const refused = calls.filter((c) => c.status === 'failed');
    assert.deepEqual(
      new Set(refused.map((c) => [c.node_id, c.reason_code].join(' '))),
      new Set([`${two.id} PLATFORM.0503`]),
    );
    assert.equal(refused.length, reoffered, 'a record for each refusal');
    // (A call whose admission had begun when the signal came is written just after it: a second of grace.)
    const late = on(two, 'completed').filter((c) => Date.parse(c.created_at) > Date.parse(drainedAt) + 1000);
    assert.deepEqual(late, [], `node 2 took no call after its SIGTERM at ${drainedAt}`);
    assert.ok(on(two, 'completed').length > 0, 'node 2 held calls when it was told to drain');
    const offered = calls.map((c) => Date.parse(c.created_at)).sort((a, b) => a - b);
    console.log(
      `    ${completed.length} calls over ${((offered.at(-1)! - offered[0]!) / 1000).toFixed(1)} s; node 2 answered ` +
        `${on(two, 'completed').length} and refused ${refused.length}, node 3 answered those`,
    );
    assert.equal(on(one, 'completed').length, CALLS_PER_NODE);
    assert.equal(on(three, 'completed').length, CALLS_PER_NODE + reoffered);
    assert.equal(on(two, 'completed').length, CALLS_PER_NODE - reoffered);
    // It exited when its last call had ended: not before, and within the few seconds its callbacks may take.
    const lastEnd = Math.max(...on(two, 'completed').map((c) => Date.parse(c.ended_at)));
    assert.ok(exitedAt >= lastEnd, 'node 2 outlived its calls');
    assert.ok(exitedAt - lastEnd < 8000, `node 2 exited ${exitedAt - lastEnd} ms after its last call ended`);
    const rows = await cluster.listing();
    assert.equal(rows.find((n) => n.id === two.id)?.state, 'stopped');
    // One call.completed per call reached the status URL.
    await server.waitFor(
      () => completed.every((c) => cluster.callbacks(c.sid, 'CALL.0300').length > 0),
      20000,
      'a call.completed for each call',
    );
    const twice = completed.filter((c) => cluster.callbacks(c.sid, 'CALL.0300').length !== 1);
    assert.deepEqual(twice, [], 'one call.completed per call');
  });
});
