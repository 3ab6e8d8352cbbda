import assert from 'node:assert/strict';
import { setRate, type Db } from '../../../store/index.js';
import { nextPort } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { AccountServer, addCarrier, allocateSwitchPorts, api, createAccountWithDid } from '../support/harness.js';
import { Cluster } from '../support/cluster.js';
import { ToneCallers } from '../support/conference-legs.js';
import {
  freshPostgresStore,
  killSwitch,
  processEnv,
  startSwitch,
  type SwitchProcess,
} from '../support/switch-process.js';

/**
 * Two nodes on one PostgreSQL, one conference held by the first, a caller of the second in it through a leg between
 * the nodes. When the holder stops with that leg still up (its drain times out), it ends the leg with a BYE: the
 * other node's caller leaves the room at once, not when its node finds the holder out of service.
 */
describe('e2e: a node stopping ends the legs other nodes have into its conferences', function () {
  this.timeout(120_000);
  const DID = '+254711500047';
  const server = new AccountServer();
  const nodes: Array<{ id: string; ports: ReturnType<typeof allocateSwitchPorts>; sw?: SwitchProcess }> = [
    { id: 'stop-a', ports: allocateSwitchPorts() },
    { id: 'stop-b', ports: allocateSwitchPorts() },
  ];
  const callers = new ToneCallers();
  let url: string;
  let db: Db;

  before(async () => {
    await server.listen();
    ({ url, db } = await freshPostgresStore('simu_room_stop'));
  });

  after(async () => {
    callers.remove();
    for (const n of nodes) await killSwitch(n.sw, n.ports.ng);
    await db?.destroy();
    await server.close();
  });

  it("the holder's drain times out: the other node's caller gets the leg's BYE and is hung up", async () => {
    for (const n of nodes) {
      n.sw = await startSwitch(
        processEnv(n.ports, { SIMU_DATABASE_URL: url, SIMU_NODE_ID: n.id, SIMU_DRAIN_SECONDS: '1' }),
      );
    }
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    await setRate(db, 'inbound', 6000);
    const acct = await createAccountWithDid(db, DID);
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/conference') });
    server.verbs('/conference', '<Response><Dial><Conference beep="false">standup</Conference></Dial></Response>');
    await addCarrier(db, nextPort());
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks within 2 s

    const baseB = `http://127.0.0.1:${b.ports.http}`;
    const count = async () =>
      (
        (await api(baseB, acct.key, 'GET', '/api/conferences')).body.conferences as Array<{ participant_count: number }>
      )[0]?.participant_count ?? 0;
    for (const [i, n] of nodes.entries()) {
      await callers.call({ sip: n.ports.sip, did: DID, tone: 440 + 220 * i });
      await eventually(async () => (await count()) === i + 1, `caller ${i + 1} joined through ${n.id}`, 15_000);
    }
    assert.deepEqual(await db('room_leases').where({ account_id: acct.id }).select('node_id'), [{ node_id: 'stop-a' }]);

    const exit = a.sw!.stop('SIGTERM');
    const onB = callers.legs[1]!;
    const r = await Promise.race([onB.sipp.done, new Promise<undefined>((r) => setTimeout(r, 15_000, undefined))]);
    assert.equal(r?.code, 0, `the caller of node B was hung up:\n${onB.sipp.output()}`);
    assert.equal(await exit, 0, 'the holder stopped');
    a.sw = undefined;
    assert.doesNotMatch(
      b.sw!.output(),
      /the node holding the room is gone/,
      'node B learned of the end from the BYE, not by finding the holder out of service',
    );
  });
});

/**
 * The same for a queue: the holder's drain times out with a caller of the other node waiting in it. That caller
 * leaves with QueueResult system-shutdown, told by the holder over the leg before its BYE, and its action runs.
 */
describe('e2e: a node stopping ends the legs other nodes have into its queues', function () {
  this.timeout(120_000);
  const DID = '+254711500045';
  const callers = new ToneCallers();
  let cluster: Cluster;

  before(async () => {
    cluster = await Cluster.start('queue_stop', { size: 2, env: { SIMU_DRAIN_SECONDS: '1' } });
  });

  after(async () => {
    callers.remove();
    await cluster?.stop();
  });

  it("the holder's drain times out: the other node's waiting caller leaves with system-shutdown at once", async () => {
    const server = cluster.server;
    await setRate(cluster.db, 'inbound', 6000);
    const acct = await cluster.account(DID, { voicePath: '/enqueue' });
    server.verbs(
      '/enqueue',
      `<Response><Enqueue action="${server.url('/left')}" waitUrl="${server.url('/wait')}">support</Enqueue></Response>`,
    );
    server.verbs('/wait', '<Response><Pause length="2"/></Response>');
    server.verbs('/left', '<Response><Hangup/></Response>');
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks and numbers within 2 s
    const [n1, n2] = [cluster.node(1), cluster.node(2)];
    const members = async () => {
      const r = await api(n2.baseUrl, acct.key, 'GET', '/api/queues/support/members');
      return r.status === 200 ? (r.body.members as Array<{ call_sid: string }>) : [];
    };
    await callers.call({ sip: n1.ports.sip, did: DID, tone: 440 });
    await eventually(async () => (await members()).length === 1, 'a caller queued on node 1', 15_000);
    const second = await callers.call({ sip: n2.ports.sip, did: DID, tone: 660 });
    await eventually(async () => (await members()).length === 2, 'a caller of node 2 queued on node 1', 15_000);
    const secondSid = (await members())[1]!.call_sid;

    const exit = n1.sw!.stop('SIGTERM');
    const r = await Promise.race([second.sipp.done, new Promise<undefined>((r) => setTimeout(r, 15_000, undefined))]);
    assert.equal(r?.code, 0, `node 2's caller was hung up by its action's document:\n${second.sipp.output()}`);
    assert.equal(await exit, 0, 'the holder stopped');
    const left = server.requests.find((q) => q.url === '/left' && q.json?.CallSid === secondSid);
    assert.equal(left?.json?.QueueResult, 'system-shutdown');
    assert.doesNotMatch(
      n2.sw!.output(),
      /the node holding it is gone/,
      'node 2 learned of the end over the leg, not by finding the holder out of service',
    );
  });
});
