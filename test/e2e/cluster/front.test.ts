import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { setRate, type Db } from '../../../store/index.js';
import { runSipp, type SippRun } from '../../support/sipp.js';
import { extraBlock, nextPort, nextPorts } from '../../support/ports.js';
import { eventually } from '../../support/wait.js';
import { AccountServer, addCarrier, allocateSwitchPorts, createAccountWithDid } from '../support/harness.js';
import { KamailioFront } from '../support/kamailio-front.js';
import {
  freshPostgresStore,
  killSwitch,
  processEnv,
  startSwitch,
  type SwitchProcess,
} from '../support/switch-process.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

/** New calls a second the carrier offers the front, in both tests. */
const RATE = 50;
/** How long each call lasts before the carrier hangs up (ms). */
const CALL_MS = 10_000;
/** The front's OPTIONS probe interval (s): a node that stops answering is out of the set within it. */
const PROBE_SECONDS = 1;
/** The front's address: not the carrier's, so the nodes must read the carrier from the front's Via. */
const FRONT_HOST = '127.0.0.2';
const CARRIER_HOST = '127.0.0.1';

/**
 * rtpengine holds ~4 ports a call, and keeps them a while after: each node relays media on an address of its own,
 * as on its own host, so that all three can use one range as large as a node needs.
 */
const MEDIA_PORTS = extraBlock();

type Node = {
  id: string;
  media: string;
  ports: ReturnType<typeof allocateSwitchPorts>;
  env?: Record<string, string>;
  sw?: SwitchProcess;
};

/**
 * Kamailio (deploy/kamailio/kamailio.cfg) in front of three nodes on one PostgreSQL: a SIPp carrier calls a DID
 * through the front at RATE calls/s. Rolling upgrade: each node in turn is drained (`simu node drain --wait`) and
 * started again, and no call fails; then one node is SIGKILLed under the same load: only its calls fail, the
 * front stops offering it INVITEs within its probe interval, and a survivor closes its calls once.
 */
describe('e2e: Kamailio in front of three nodes', function () {
  this.timeout(300_000);
  const DID = '+254711600001';
  const server = new AccountServer();
  const nodes: Node[] = ['front-a', 'front-b', 'front-c'].map((id, i) => ({
    id,
    media: `127.0.0.${11 + i}`,
    ports: allocateSwitchPorts({ rtpMin: MEDIA_PORTS.first, rtpMax: MEDIA_PORTS.last }),
  }));
  const FRONT_PORT = nextPort();
  const CARRIER = nextPort();
  const SINK = nextPorts(2);
  let url: string;
  let db: Db;
  let accountId: string;
  let front: KamailioFront | undefined;
  let runDir: string;
  const sipps: SippRun[] = [];
  /** Every node process's output, restarted ones' too. */
  const outputs: Array<[string, () => string]> = [];
  async function start(n: Node): Promise<void> {
    n.sw = await startSwitch(n.env!, 60_000);
    outputs.push([n.id, n.sw.output]);
  }

  before(async function () {
    this.timeout(120_000);
    await server.listen();
    ({ url, db } = await freshPostgresStore('simu_front'));
    await setRate(db, 'inbound', 60); // 0.60 a minute: every 10-second call costs one first block
    const acct = await createAccountWithDid(db, DID, 100_000_000);
    accountId = acct.id;
    await db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status'), max_cps: 1000, max_concurrent_calls: 10_000 });
    await db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/hold') });
    server.verbs('/hold', '<Response><Pause length="60"/></Response>');
    await addCarrier(db, nextPort(), 'carrier', undefined, [CARRIER_HOST]);
    for (const n of nodes) {
      n.env = processEnv(n.ports, {
        SIMU_DATABASE_URL: url,
        SIMU_NODE_ID: n.id,
        SIMU_NODE_GONE_AFTER_SECONDS: '4',
        SIMU_SIP_TRUSTED_FRONTS: FRONT_HOST,
        SIMU_RTPENGINE_INTERFACE: n.media,
      });
      await start(n);
    }
    runDir = mkdtempSync(path.join(os.tmpdir(), 'simu-front-'));
    front = await KamailioFront.start({
      host: FRONT_HOST,
      port: FRONT_PORT,
      nodePorts: nodes.map((n) => n.ports.sip),
      probeSeconds: PROBE_SECONDS,
    });
  });

  afterEach(() => {
    for (const s of sipps.splice(0)) s.kill();
  });

  after(async function () {
    this.timeout(60_000);
    for (const s of sipps) s.kill();
    front?.stop();
    for (const n of nodes) await killSwitch(n.sw, n.ports.ng);
    await db?.destroy();
    await server.close();
  });

  /** The nodes (their SIP ports) the front's dispatcher holds active. */
  const activeNodes = () => front!.activeNodes();

  /** A SIPp carrier offering `calls` calls at RATE a second through the front; its statistics in a file. */
  function offer(calls: number): { sipp: SippRun; stats: string } {
    const stats = path.join(runDir, `stats-${Date.now()}.csv`);
    const sipp = runSipp(
      [
        `${FRONT_HOST}:${FRONT_PORT}`,
        ...['-sf', path.join(ROOT, 'test', 'e2e', 'support', 'scenarios', 'uac-front.xml'), '-s', DID.slice(1)],
        ...['-key', 'media_sink', String(SINK), '-i', CARRIER_HOST, '-p', String(CARRIER)],
        ...['-r', String(RATE), '-m', String(calls), '-d', String(CALL_MS), '-l', String(RATE * 30)],
        ...['-recv_timeout', '20000', '-timeout', `${Math.ceil(calls / RATE) + 60}s`],
        ...['-trace_stat', '-stf', stats, '-fd', '1', '-trace_err', '-error_file', errors(stats)],
      ],
      { limitMs: (calls / RATE + 90) * 1000 },
    );
    sipps.push(sipp);
    return { sipp, stats };
  }

  const errors = (stats: string) => stats.replace(/\.csv$/, '-errors.log');

  /** Waits until every call of `since` on has ended; names the ones that have not when it gives up. */
  async function allCompleted(since: string, what: string): Promise<void> {
    const open = () =>
      db('calls')
        .where({ account_id: accountId, direction: 'inbound' })
        .where('created_at', '>=', since)
        .whereNull('ended_at')
        .select('sid', 'node_id', 'status', 'reason_code');
    for (let i = 0; i < 60; i++) {
      if ((await open()).length === 0) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.fail(`${what}: ${JSON.stringify(await open())}`);
  }

  /** SIPp's last cumulative counts. */
  /** SIPp's totals, and its failures by cause (`FailedTimeoutOnRecv=12 ...`) for an assertion's message. */
  function counts(stats: string): { total: number; ok: number; failed: number; causes: string } {
    const lines = readFileSync(stats, 'utf8').trim().split('\n');
    const head = lines[0]!.split(';');
    const last = lines.at(-1)!.split(';');
    const col = (name: string) => Number(last[head.indexOf(name)]);
    const causes = head
      .filter((h) => /^Failed\w+\(C\)$/.test(h) && h !== 'FailedCall(C)' && col(h) > 0)
      .map((h) => `${h.slice(0, -3)}=${col(h)}`)
      .join(' ');
    return { total: col('OutgoingCall(C)'), ok: col('SuccessfulCall(C)'), failed: col('FailedCall(C)'), causes };
  }

  /** `node-1 END.0200=120 ...`: how many call records each node wrote, by reason. */
  function byNodeAndReason(rows: Array<{ node_id: string; reason_code: string }>): string {
    const n = new Map<string, number>();
    for (const r of rows) n.set(`${r.node_id} ${r.reason_code}`, (n.get(`${r.node_id} ${r.reason_code}`) ?? 0) + 1);
    return [...n].map(([k, v]) => `${k}=${v}`).join(', ');
  }

  /** Each call of `since` on: completed calls have one debit and one terminal callback; returns the rows. */
  async function checkOnce(since: string) {
    const rows = await db('calls')
      .where({ account_id: accountId, direction: 'inbound' })
      .where('created_at', '>=', since);
    const debits = await db('wallet_transactions')
      .whereIn(
        'call_id',
        rows.map((r) => r.id),
      )
      .where({ direction: 'debit' });
    const debitsOf = new Map<string, number>();
    for (const d of debits) debitsOf.set(d.call_id, (debitsOf.get(d.call_id) ?? 0) + 1);
    for (const r of rows) {
      const terminal = server.requests.filter(
        (q) => q.json?.sid === r.sid && (q.json?.code === 'CALL.0300' || q.json?.code === 'CALL.0400'),
      );
      assert.equal(terminal.length, 1, `call ${r.sid} (${r.node_id}, ${r.status}) has one terminal status callback`);
      assert.equal(debitsOf.get(r.id) ?? 0, Number(r.cost_cents) > 0 ? 1 : 0, `call ${r.sid} is charged once`);
    }
    return rows;
  }

  it('a rolling upgrade (each node drained and started again in turn) fails no call', async () => {
    const since = new Date().toISOString();
    // Long enough for three drains (each waits out CALL_MS) and restarts.
    const { sipp, stats } = offer(RATE * 75);
    await new Promise((r) => setTimeout(r, 5000));
    for (const n of nodes) {
      const t0 = Date.now();
      await run(path.join(ROOT, 'bin', 'simu'), ['node', 'drain', '--wait', '--timeout', '60'], {
        env: { ...process.env, SIMU_DATA_DIR: n.env!.SIMU_DATA_DIR! },
      });
      const drained = Date.now() - t0;
      await start(n);
      await eventually(async () => (await activeNodes()).includes(n.ports.sip), `${n.id} back in the set`, 30000);
      console.log(`      ${n.id}: drained in ${drained} ms, back in the set after ${Date.now() - t0} ms`);
    }
    const code = await sipp.exited;
    const c = counts(stats);
    console.log(`      ${c.total} calls offered at ${RATE}/s: ${c.ok} succeeded, ${c.failed} failed`);
    if (c.failed > 0) {
      const why = await db('calls')
        .where({ account_id: accountId, direction: 'inbound' })
        .where('created_at', '>=', since)
        .whereNot({ reason_code: 'END.0200' })
        .select('node_id', 'status', 'reason_code', 'created_at', 'ended_at');
      console.log(why);
      for (const [id, output] of outputs)
        console.log(
          id,
          output()
            .split('\n')
            .filter((l) => /"level":(40|50)/.test(l))
            .slice(0, 15)
            .join('\n'),
        );
    }
    assert.equal(c.failed, 0, sipp.output().slice(-3000));
    assert.equal(code, 0, sipp.output().slice(-3000));
    await allCompleted(since, 'every call completed');
    await new Promise((r) => setTimeout(r, 3000)); // late duplicates would arrive now
    const rows = await checkOnce(since);
    // Attempts the front moved to the next node are recorded where they were tried: refused by a draining node
    // before the front's probe took it out (503, PLATFORM.0503), or cancelled by the front when a busy node sent
    // not even 100 Trying within its timeout (END.0487). The calls themselves succeed elsewhere.
    const refused = rows.filter((r) => r.status !== 'completed');
    const draining = refused.filter((r) => r.reason_code === 'PLATFORM.0503').length;
    const cancelled = refused.filter((r) => r.reason_code === 'END.0487').length;
    console.log(`      retried on the next node: ${draining} refused while draining, ${cancelled} too slow`);
    assert.equal(draining + cancelled, refused.length, JSON.stringify(refused.map((r) => r.reason_code)));
    assert.equal(rows.length - refused.length, c.ok, 'one call record a call');
    assert.deepEqual(
      new Set(rows.filter((r) => r.status === 'completed').map((r) => r.node_id)),
      new Set(nodes.map((n) => n.id)),
      'every node took calls',
    );
  });

  it("a node SIGKILLed under load: out of the front's set within its probe interval, only its calls fail", async () => {
    const since = new Date().toISOString();
    const { sipp, stats } = offer(RATE * 25);
    await new Promise((r) => setTimeout(r, 8000));
    const victim = nodes[2]!;
    await killSwitch(victim.sw, victim.ports.ng);
    victim.sw = undefined;
    const killedAt = Date.now();
    await eventually(
      async () => !(await activeNodes()).includes(victim.ports.sip),
      'the front drops the dead node',
      10000,
    );
    const outAfter = Date.now() - killedAt;
    console.log(`      the front took ${victim.id} out of its set ${outAfter} ms after SIGKILL`);
    assert.ok(outAfter <= PROBE_SECONDS * 1000 + 2000, `out of the set within the probe interval (${outAfter} ms)`);
    await sipp.exited;
    const c = counts(stats);
    await allCompleted(since, "every call completed, the dead node's by a survivor");
    await new Promise((r) => setTimeout(r, 3000));
    const rows = await checkOnce(since);
    const victims = rows.filter((r) => r.node_id === victim.id);
    const closedBySurvivor = victims.filter((r) => r.reason_code === 'END.0504');
    console.log(
      `      ${c.total} calls offered at ${RATE}/s: ${c.failed} failed; ${victim.id} held or was setting up ${closedBySurvivor.length}`,
    );
    // A call the dead node had answered fails at the carrier; one it was still setting up either fails or, when
    // the INVITE went unanswered, is moved to the next node by the front (and the dead node's row is closed too).
    const answered = closedBySurvivor.filter((r) => r.answered_at !== null).length;
    assert.ok(
      c.failed >= answered && c.failed <= closedBySurvivor.length,
      `the failed calls (${c.failed}: ${c.causes}) are the dead node's (${answered} answered, ` +
        `${closedBySurvivor.length} in all); records by node and reason: ${byNodeAndReason(rows)}`,
    );
    assert.equal(rows.length - closedBySurvivor.length, c.ok, 'every other call succeeded');
    assert.ok(
      closedBySurvivor.every((r) => r.created_at < new Date(killedAt).toISOString()),
      'no call reached it after',
    );
  });
});
