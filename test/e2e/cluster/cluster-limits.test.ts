import assert from 'node:assert/strict';
import { setRate, LIVE_CALL_STATUSES } from '../../../store/index.js';
import { nextPorts } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';
import { api, carrier, type SippRun } from '../support/harness.js';
import { Cluster } from '../support/cluster.js';

/**
 * Three switch processes (nodes) on one PostgreSQL, originates spread over their three APIs at once: the wallet's
 * first blocks, the concurrency cap and the calls-per-second cap hold for the account as a whole, not per node
 * (the store decides each admission).
 */
describe('e2e: limits hold across three nodes on one PostgreSQL', function () {
  this.timeout(180000);
  const SINK = nextPorts(2);
  let cluster: Cluster;
  let sipp: SippRun | undefined;

  before(async () => {
    cluster = await Cluster.start('limits');
    cluster.server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    await setRate(cluster.db, 'outbound', 100); // 1.00 a minute: a first block is 100
    // A carrier that answers every call and holds it until the switch hangs up.
    sipp = carrier({ port: cluster.carrierPort, sink: SINK, calls: 1000 });
    await waitForBound(cluster.carrierPort).catch((e: Error) => {
      throw new Error(`${e.message}\n${sipp?.output()}`);
    });
  });

  after(async () => {
    sipp?.kill();
    await cluster?.stop();
  });

  /** An account with a DID, its limits set before any node has read it. */
  const account = (did: string, balanceCents: number, maxConcurrent: number, maxCps: number) =>
    cluster.account(did, { balanceCents, maxConcurrent, maxCps });

  /** `n` originates sent at once, round-robin over the three nodes' APIs. */
  async function originates(acct: { key: string; did: string }, n: number, first: number) {
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await fetch(`${cluster.nodes[i % 3]!.baseUrl}/api/calls/originate`, {
          method: 'POST',
          headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ to: `+2547220${first + i}`, from: acct.did, url: cluster.server.url('/hold') }),
        });
        const body = (await res.json()) as { code?: string };
        return { status: res.status, code: body.code, retryAfter: res.headers.get('retry-after') };
      }),
    );
    return { results, ms: Date.now() - started };
  }

  const liveOf = async (accountId: string) =>
    Number(
      (
        await cluster
          .db('calls')
          .where({ account_id: accountId })
          .whereIn('status', [...LIVE_CALL_STATUSES])
          .count({ n: '*' })
          .first()
      )?.n ?? 0,
    );

  async function hangUpAll(acct: { id: string; key: string }) {
    const rows = await cluster
      .db('calls')
      .where({ account_id: acct.id })
      .whereIn('status', [...LIVE_CALL_STATUSES])
      .select('sid', 'node_id');
    for (const r of rows) {
      const n = cluster.nodes.find((x) => x.id === r.node_id)!;
      await api(n.baseUrl, acct.key, 'POST', '/api/calls/hangup', { sid: r.sid });
    }
  }

  it('40 simultaneous originates over three nodes against a wallet of three first blocks admit exactly 3', async () => {
    const acct = await account('+254711600001', 300, 1000, 1000);
    const { results } = await originates(acct, 40, 10000);
    const admitted = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 402 && r.code === 'BILL.0402');
    assert.equal(admitted.length, 3, JSON.stringify(results));
    assert.equal(refused.length, 37, JSON.stringify(results));
    assert.equal(
      (await cluster.db('calls').where({ account_id: acct.id })).length,
      3,
      'a refused call is never written',
    );
    await hangUpAll(acct);
  });

  it('a concurrency cap of 5 is never exceeded by 40 simultaneous originates over three nodes', async () => {
    const acct = await account('+254711600002', 1_000_000, 5, 1000);
    // Three waves, each once the last one's calls have ended: a race at the last slot has three chances to show.
    for (let wave = 0; wave < 3; wave++) {
      let peak = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peak = Math.max(peak, await liveOf(acct.id));
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const { results } = await originates(acct, 40, 20000 + wave * 100);
      sampling = false;
      await sampler;
      peak = Math.max(peak, await liveOf(acct.id));
      const admitted = results.filter((r) => r.status === 201);
      const refused = results.filter((r) => r.status === 429 && r.code === 'LIMIT.0429');
      assert.equal(admitted.length, 5, `wave ${wave}: ${JSON.stringify(results)}`);
      assert.equal(refused.length, 35, `wave ${wave}: ${JSON.stringify(results)}`);
      assert.ok(peak <= 5, `wave ${wave}: at most 5 live calls at once (saw ${peak})`);
      await hangUpAll(acct);
      await eventually(async () => (await liveOf(acct.id)) === 0, 'the wave ended', 15000);
    }
  });

  it('a calls-per-second cap of 4 holds for the account over three nodes', async () => {
    const acct = await account('+254711600003', 1_000_000, 1000, 4);
    const { results, ms } = await originates(acct, 40, 30000);
    const admitted = results.filter((r) => r.status === 201).length;
    const refused = results.filter((r) => r.status === 429 && r.code === 'LIMIT.0430');
    assert.equal(admitted + refused.length, 40, JSON.stringify(results));
    // Every second the originates spanned may admit 4; per-node windows admitted 4 on each node at once.
    assert.ok(admitted >= 4, `at least the cap is admitted (${admitted})`);
    assert.ok(admitted <= 4 * Math.ceil(ms / 1000), `${admitted} admitted in ${ms} ms at 4 a second`);
    if (ms < 1000) assert.equal(admitted, 4);
    await hangUpAll(acct);
  });
});
