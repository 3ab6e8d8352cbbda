import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../../store/index.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';
import {
  AccountServer,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrier,
  createAccountWithDid,
  runSipp,
  SCENARIOS,
  type SippRun,
} from '../support/harness.js';
import {
  freshPostgresStore,
  killSwitch,
  processEnv,
  startSwitch,
  type SwitchProcess,
} from '../support/switch-process.js';

const REGISTER = path.resolve(import.meta.dirname, '..', '..', 'sip', 'registrar-scenarios', 'register-bearer.xml');

/**
 * Registrations across nodes on one PostgreSQL: a phone registered over UDP through node 1 answers a call that
 * arrived on node 2 (node 2 sends the INVITE straight to the phone's address); a phone registered over TCP through
 * node 1 is marked unreachable when node 1 is declared gone (its end-user unregistered, a Dial of it fails at once)
 * until it registers again.
 */
describe('e2e: a phone registered on one node, a call arriving on another', function () {
  this.timeout(120000);
  const DID = '+254711500006';
  const server = new AccountServer();
  const nodes: Array<{ id: string; ports: ReturnType<typeof allocateSwitchPorts>; sw?: SwitchProcess }> = [
    { id: 'reg-1', ports: allocateSwitchPorts() },
    { id: 'reg-2', ports: allocateSwitchPorts() },
  ];
  const TRUNK = nextPort();
  const SINK = nextPorts(2);
  const SECRET = randomUUID();
  let url: string;
  let db: Db;
  let acct: Awaited<ReturnType<typeof createAccountWithDid>>;
  const sipps: SippRun[] = [];

  const start = async (n: (typeof nodes)[number]) => {
    const env = processEnv(n.ports, {
      SIMU_DATABASE_URL: url,
      SIMU_NODE_ID: n.id,
      SIMU_NODE_GONE_AFTER_SECONDS: '4',
    });
    // Nodes sharing a store share the server secret (phone tokens are signed with it).
    writeFileSync(path.join(env.SIMU_DATA_DIR!, 'server-secret'), SECRET + '\n', { mode: 0o600 });
    n.sw = await startSwitch(env);
  };
  const base = (n: (typeof nodes)[number]) => `http://127.0.0.1:${n.ports.http}`;

  /** A new end-user of the account and a phone token for it, through node 1's API. */
  const endUser = async () => {
    const u = await api(base(nodes[0]!), acct.key, 'POST', '/api/users/create', {
      email: `${randomUUID()}@example.com`,
    });
    assert.equal(u.status, 201, JSON.stringify(u.body));
    const minted = await api(base(nodes[0]!), acct.key, 'POST', '/api/phone-tokens/mint', { uuid: u.body.uuid });
    assert.equal(minted.status, 200, JSON.stringify(minted.body));
    return { id: u.body.uuid as string, ext: u.body.extension_number as string, token: minted.body.token as string };
  };

  /** SIPp registers the phone through `sip` (Bearer) from `port`; `hold`: it keeps its TCP connection open. */
  const register = (sip: number, port: number, who: { ext: string; token: string }, tcp = false, hold = false) =>
    runSipp([
      `127.0.0.1:${sip}`,
      ...['-sf', hold ? path.join(SCENARIOS, 'phone-register-hold.xml') : REGISTER],
      ...['-i', '127.0.0.1', '-p', String(port), '-m', '1', ...(tcp ? ['-t', 't1'] : [])],
      ...['-key', 'domain', `${acct.id}.sip.test`, '-key', 'ext', who.ext, '-key', 'bearer', who.token],
    ]);

  /** The carrier (from 127.0.0.2) calls the DID on node 2, whose document Dials the extension. */
  const callThroughNode2 = (ext: string) => {
    server.verbs(
      '/dial',
      `<Response><Dial timeout="10" timeLimit="2" action="${server.url('/after')}"><Extension>${ext}</Extension></Dial></Response>`,
    );
    const run = runSipp([
      `127.0.0.1:${nodes[1]!.ports.sip}`,
      ...['-sf', path.join(SCENARIOS, 'uac-inbound.xml'), '-key', 'media_sink', String(SINK)],
      ...['-s', DID.slice(1), '-i', '127.0.0.2', '-mi', '127.0.0.1', '-p', String(nextPort()), '-m', '1'],
    ]);
    sipps.push(run);
    return run;
  };

  /** DialCallStatus of the Dial's action request, once it came. */
  const dialStatus = (): string | undefined => {
    const r = server.requests.find((q) => q.url.split('?')[0] === '/after');
    if (!r) return undefined;
    return String(r.json?.DialCallStatus ?? new URLSearchParams(r.body).get('DialCallStatus') ?? '');
  };

  const lastInbound = () =>
    eventually(async () => {
      const row = await db('calls')
        .where({ account_id: acct.id, direction: 'inbound' })
        .whereNull('parent_call_id')
        .orderBy('created_at', 'desc')
        .first();
      return row?.ended_at ? row : undefined;
    }, 'the inbound call has ended');

  before(async () => {
    await server.listen();
    ({ url, db } = await freshPostgresStore('simu_regs'));
    for (const n of nodes) await start(n);
    acct = await createAccountWithDid(db, DID);
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/dial') });
    server.verbs('/after', '<Response><Hangup/></Response>');
    await addCarrier(db, TRUNK, 'carrier', undefined, ['127.0.0.2']);
    await new Promise((r) => setTimeout(r, 2500)); // each node re-reads trunks within 2 s
  });

  after(async () => {
    for (const s of sipps) s.kill();
    for (const n of nodes) await killSwitch(n.sw, n.ports.ng);
    await db?.destroy();
    await server.close();
  });

  it('a phone registered over UDP through node 1 answers a call that arrived on node 2', async () => {
    const who = await endUser();
    const port = nextPort();
    const reg = register(nodes[0]!.ports.sip, port, who);
    assert.equal(await reg.exited, 0, reg.output());
    await eventually(
      async () => (await db('registrations').where({ end_user_id: who.id }).first())?.node_id === 'reg-1',
      'the binding stored with node 1',
    );
    // The phone answers on the port it registered from.
    const phone = carrier({ port, sink: nextPorts(2), scenario: 'uas-answer.xml' });
    sipps.push(phone);
    await waitForBound(port);
    const caller = callThroughNode2(who.ext);
    assert.equal(await phone.exited, 0, `the phone answered and was hung up: ${phone.output()}`);
    assert.equal(await caller.exited, 0, caller.output());
    const call = await lastInbound();
    assert.equal(call.node_id, 'reg-2');
    assert.equal(call.status, 'completed');
    assert.equal(dialStatus(), 'completed');
  });

  it("node 1 gone: its TCP phone's binding is unreachable (a Dial of it fails at once) until it registers again", async () => {
    const who = await endUser();
    const held = register(nodes[0]!.ports.sip, nextPort(), who, true, true);
    sipps.push(held);
    const row = await eventually(async () => {
      const r = await db('registrations').where({ end_user_id: who.id }).first();
      return r?.transport === 'TCP' ? r : undefined;
    }, 'the TCP binding stored');
    assert.equal(row.node_id, 'reg-1');
    assert.equal((await db('end_users').where({ id: who.id }).first()).registration_state, 'registered');

    await nodes[0]!.sw!.stop('SIGKILL');
    nodes[0]!.sw = undefined;
    held.kill();
    const marked = await eventually(
      async () => (await db('registrations').where({ end_user_id: who.id }).first())?.unreachable_at ?? undefined,
      'the binding marked unreachable',
      20000,
    );
    assert.ok(marked, 'marked');
    assert.equal((await db('end_users').where({ id: who.id }).first()).registration_state, 'unregistered');

    server.requests.length = 0;
    const started = Date.now();
    callThroughNode2(who.ext);
    await server.waitFor(() => dialStatus() !== undefined, 10000, 'the Dial action');
    assert.ok(Date.now() - started < 8000, 'the Dial failed at once, not after its timeout');
    assert.equal(dialStatus(), 'failed');

    // Registering again (through node 2) makes it reachable.
    const again = register(nodes[1]!.ports.sip, nextPort(), who);
    assert.equal(await again.exited, 0, again.output());
    await eventually(async () => {
      const rows = await db('registrations').where({ end_user_id: who.id });
      return rows.some((r) => r.node_id === 'reg-2' && r.unreachable_at === null) || undefined;
    }, 'a reachable binding again');
    assert.equal((await db('end_users').where({ id: who.id }).first()).registration_state, 'registered');
  });
});
