import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { setRate, type Db } from '../../store/index.js';
import { nextPort, nextPorts } from '../support/ports.js';
import { eventually } from '../support/wait.js';
import {
  AccountServer,
  addCarrier,
  allocateSwitchPorts,
  carrierCallsDid,
  createAccountWithDid,
  type SippRun,
} from './harness.js';
import { freshPostgresStore, killSwitch, processEnv, startSwitch, type SwitchProcess } from './switch-process.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const run = promisify(execFile);

/**
 * Two switch processes (nodes) on one PostgreSQL: each writes its heartbeat; when one is SIGKILLed with calls up,
 * the other declares it gone and closes each of its calls once (END.0504, billed, one terminal status callback).
 */
describe('e2e: two nodes on one PostgreSQL, one killed with calls up', function () {
  this.timeout(120000);
  const DID = '+254711500001';
  const server = new AccountServer();
  const nodes: Array<{ id: string; ports: ReturnType<typeof allocateSwitchPorts>; sw?: SwitchProcess }> = [
    { id: 'node-a', ports: allocateSwitchPorts() },
    { id: 'node-b', ports: allocateSwitchPorts() },
  ];
  const CALLER = nextPort();
  const SINK = nextPorts(2);
  let url: string;
  let db: Db;
  let sipp: SippRun | undefined;

  const envOf = (n: (typeof nodes)[number]) =>
    processEnv(n.ports, {
      SIMU_DATABASE_URL: url,
      SIMU_NODE_ID: n.id,
      SIMU_NODE_GONE_AFTER_SECONDS: '4',
    });

  before(async () => {
    await server.listen();
    ({ url, db } = await freshPostgresStore('simu_nodes')); // migrated once, before the nodes start
  });

  after(async () => {
    sipp?.kill();
    for (const n of nodes) {
      await killSwitch(n.sw, n.ports.ng);
    }
    await db?.destroy();
    await server.close();
  });

  it("the survivor closes each of the dead node's calls once; the wallet falls by exactly their costs", async () => {
    for (const n of nodes) n.sw = await startSwitch(envOf(n));
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    await setRate(db, 'inbound', 6000); // 60.00 a minute, per second after the first minute
    const acct = await createAccountWithDid(db, DID);
    await db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/hold') });
    server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    await addCarrier(db, nextPort());
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks within 2 s

    const simuNodes = async () =>
      JSON.parse(
        (
          await run(path.join(ROOT, 'bin', 'simu'), ['nodes', '--json'], {
            env: { ...process.env, SIMU_DATABASE_URL: url },
          })
        ).stdout,
      ) as Array<{ id: string; state: string; live_calls: number; gone_by: string | null }>;
    const up = await simuNodes();
    assert.deepEqual(
      up.map((n) => [n.id, n.state]),
      [
        ['node-a', 'up'],
        ['node-b', 'up'],
      ],
    );

    // Two calls held by node B.
    sipp = carrierCallsDid({ sip: b.ports.sip, did: DID.slice(1), port: CALLER, sink: SINK, calls: 2 });
    await server.waitFor(() => server.statusEvents().filter((c) => c === 'CALL.0200').length === 2, 15000, 'answered');
    const held = await db('calls').where({ account_id: acct.id }).select('id', 'sid', 'node_id', 'status');
    assert.deepEqual(
      held.map((c) => [c.node_id, c.status]),
      [
        ['node-b', 'answered'],
        ['node-b', 'answered'],
      ],
    );
    await eventually(
      async () => (await simuNodes()).find((n) => n.id === 'node-b')?.live_calls === 2,
      'B counts 2',
      5000,
    );
    await new Promise((r) => setTimeout(r, 2000)); // talk time to bill
    const balanceBefore = Number((await db('accounts').where({ id: acct.id }).first()).balance_cents);

    await b.sw!.stop('SIGKILL');
    b.sw = undefined;
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0300').length >= 2,
      20000,
      "the dead node's calls closed",
    );
    await new Promise((r) => setTimeout(r, 3000)); // nothing more arrives
    const rows = await db('calls').whereIn(
      'id',
      held.map((c) => c.id),
    );
    for (const r of rows) {
      assert.equal(r.status, 'completed');
      assert.equal(r.reason_code, 'END.0504');
      const reports = server.requests.filter((q) => q.json?.sid === r.sid && q.json?.code === 'CALL.0300');
      assert.equal(new Set(reports.map((q) => q.json.id)).size, 1, 'one terminal status callback');
    }
    const costs = rows.reduce((s, r) => s + Number(r.cost_cents), 0);
    const debits = await db('wallet_transactions')
      .whereIn(
        'call_id',
        held.map((c) => c.id),
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
    const after = await simuNodes();
    const gone = after.find((n) => n.id === 'node-b')!;
    assert.equal(gone.state, 'gone');
    assert.equal(gone.gone_by, 'node-a');
    assert.equal(after.find((n) => n.id === 'node-a')!.state, 'up');
    assert.ok(a.sw, 'node A still runs');
  });
});
