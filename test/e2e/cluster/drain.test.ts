import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { openDb, type Db } from '../../../store/index.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import {
  AccountServer,
  addCarrier,
  allocateSwitchPorts,
  carrierCallsDid,
  createAccountWithDid,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';
import { startSwitch, pidsMatching, type SwitchProcess } from '../support/switch-process.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

/**
 * A deploy without cutting calls: `simu node drain` (SIGTERM) turns the switch away from new work (health 503, SIP
 * 503 with Retry-After, API 503 PLATFORM.0503 with Retry-After) while its calls go on to their end; it then exits.
 */
describe('e2e: draining the switch process (SIGTERM, simu node drain)', function () {
  this.timeout(120000);
  const DID = '+254711400077';
  const PORTS = allocateSwitchPorts();
  const CALLER = nextPort();
  /** A second SIPp, while the first still holds CALLER. */
  const CALLER_2 = nextPort();
  const SINK = nextPorts(2);
  const server = new AccountServer();
  let dataDir: string;
  let env: Record<string, string>;
  let sw: SwitchProcess | undefined;
  let db: Db | undefined;
  const sipps: SippRun[] = [];

  async function startWithAccount(): Promise<TestAccount> {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-drain-'));
    env = {
      SIMU_DATA_DIR: dataDir,
      SIMU_HTTP_HOST: '127.0.0.1',
      SIMU_HTTP_PORT: String(PORTS.http),
      SIMU_SIP_HOST: '127.0.0.1',
      SIMU_SIP_PORT: String(PORTS.sip),
      SIMU_SIP_TLS_PORT: '0',
      SIMU_SIP_WS_PORT: '0',
      SIMU_SIP_WSS_PORT: '0',
      SIMU_RTPENGINE_NG_PORT: String(PORTS.ng),
      SIMU_RTPENGINE_DTMF_PORT: String(PORTS.dtmf),
      SIMU_RTP_PORT_MIN: String(PORTS.rtpMin),
      SIMU_RTP_PORT_MAX: String(PORTS.rtpMax),
    };
    sw = await startSwitch(env);
    db = openDb({ databaseUrl: '', dataDir });
    const acct = await createAccountWithDid(db, DID);
    await db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await addCarrier(db, nextPort());
    await new Promise((r) => setTimeout(r, 2500)); // the running switch re-reads trunks within 2 s
    return acct;
  }

  const calls = (n: number, scenario = 'uac-inbound.xml', port = CALLER) => {
    const s = carrierCallsDid({ sip: PORTS.sip, did: DID.slice(1), port, sink: SINK, scenario, calls: n });
    sipps.push(s);
    return s;
  };

  async function stopAll() {
    for (const s of sipps.splice(0)) s.kill();
    await sw?.stop('SIGKILL');
    sw = undefined;
    for (const pid of pidsMatching(`rtpengine.*--listen-ng=127.0.0.1:${PORTS.ng}( |$)`)) process.kill(pid, 'SIGKILL');
    await db?.destroy();
    db = undefined;
  }

  before(() => server.listen());
  afterEach(stopAll);
  after(() => server.close());

  it('new calls get 503 with Retry-After, calls in progress end normally, then the process exits 0', async () => {
    const acct = await startWithAccount();
    server.verbs('/hold', '<Response><Say>Draining.</Say><Pause length="6"/><Hangup/></Response>');
    await db!('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/hold') });
    const up = calls(3);
    await server.waitFor(() => server.statusEvents().filter((c) => c === 'CALL.0200').length === 3, 15000, 'answered');
    const pid = sw!.proc.pid!;
    assert.ok(existsSync(path.join(dataDir, 'simu.pid')), 'the switch wrote its pid file');

    const drained = run(path.join(ROOT, 'bin', 'simu'), ['node', 'drain', '--wait', '--timeout', '60'], {
      env: { ...process.env, SIMU_DATA_DIR: dataDir },
    });
    let health: Response | undefined;
    for (let i = 0; i < 50; i++) {
      health = await fetch(`${sw!.baseUrl}/api/health/`);
      if (health.status === 503) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(health!.status, 503);
    assert.deepEqual(await health!.json(), { status: 'draining' });

    const refused = calls(1, 'uac-inbound-503.xml', CALLER_2);
    assert.equal(await refused.exited, 0, refused.output());
    const res = await fetch(`${sw!.baseUrl}/api/calls/originate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+254722000101', from: DID, url: server.url('/hold') }),
    });
    assert.equal(res.status, 503);
    assert.ok(Number(res.headers.get('retry-after')) > 0, 'Retry-After');
    assert.equal(((await res.json()) as { code?: string }).code, 'PLATFORM.0503');

    assert.equal(await up.exited, 0, up.output()); // each got the switch's BYE after its Pause
    const { stdout } = await drained;
    assert.match(stdout, new RegExp(`switch ${pid} drained and stopped`));
    const code = await new Promise<number | null>((resolve) =>
      sw!.proc.exitCode !== null ? resolve(sw!.proc.exitCode) : sw!.proc.once('exit', resolve),
    );
    assert.equal(code, 0);
    assert.ok(!existsSync(path.join(dataDir, 'simu.pid')), 'the pid file is gone');
    const rows = await db!('calls').where({ account_id: acct.id, direction: 'inbound' }).orderBy('created_at');
    assert.deepEqual(
      rows.map((r) => [r.status, r.reason_code]),
      [...Array(3).fill(['completed', 'END.0200']), ['failed', 'PLATFORM.0503']],
    );
  });

  it('at the drain timeout the calls still up are ended, billed and reported once; a second SIGTERM stops at once', async () => {
    const acct = await startWithAccount();
    server.verbs('/long', '<Response><Pause length="60"/></Response>');
    await db!('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/long') });
    const before = server.statusEvents().filter((c) => c === 'CALL.0300').length;
    const up = calls(2);
    await server.waitFor(() => server.statusEvents().filter((c) => c === 'CALL.0200').length >= 2, 15000, 'answered');
    const t0 = Date.now();
    await run(path.join(ROOT, 'bin', 'simu'), ['node', 'drain', '--wait', '--timeout', '2'], {
      env: { ...process.env, SIMU_DATA_DIR: dataDir },
    });
    assert.ok(Date.now() - t0 < 20000, 'stopped soon after the 2-s drain time');
    assert.equal(await up.exited, 0, up.output()); // BYE from the switch, answered
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0300').length >= before + 2,
      10000,
      'both reported',
    );
    const rows = await db!('calls').where({ account_id: acct.id, direction: 'inbound' });
    for (const r of rows) {
      assert.equal(r.status, 'completed');
      assert.equal(r.reason_code, 'END.0505', 'cut by the drain timeout, not hung up');
      const charges = await db!('wallet_transactions').where({ call_id: r.id, kind: 'call' });
      assert.ok(charges.length <= 1, 'billed once');
      assert.equal(
        Number(r.cost_cents),
        charges.reduce((s, c) => s + Number(c.amount_cents), 0),
      );
    }

    // A second SIGTERM while draining stops at once, with no drain time waited out.
    sw = await startSwitch(env);
    const answered = server.statusEvents().filter((c) => c === 'CALL.0200').length;
    calls(1);
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0200').length > answered,
      15000,
      'answered again',
    );
    const t1 = Date.now();
    sw.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const code = await sw.stop('SIGTERM');
    assert.equal(code, 0);
    assert.ok(Date.now() - t1 < 8000, `stopped in ${Date.now() - t1} ms, not after the 100-s drain`);
    // The call it cut is recorded as cut by its node's stop, not as a party's hangup.
    const cut = await db!('calls')
      .where({ account_id: acct.id, direction: 'inbound' })
      .whereNotIn(
        'id',
        rows.map((r) => r.id),
      );
    assert.deepEqual(
      cut.map((r) => [r.status, r.reason_code]),
      [['completed', 'END.0505']],
    );
  });
});
