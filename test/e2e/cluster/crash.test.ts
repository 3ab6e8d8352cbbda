import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitForBound } from '../../support/wait.js';
import { openDb, setRate, type Db } from '../../../store/index.js';
import { startSwitch, pidsMatching, type SwitchProcess } from '../support/switch-process.js';
import { nextPort } from '../../support/ports.js';
import {
  AccountServer,
  allocateSwitchPorts,
  createAccountWithDid,
  addCarrier,
  carrier,
  api,
  type SippRun,
} from '../support/harness.js';

/**
 * Issue 8 "done when", crash: `kill -9` the switch with calls up, start it again: every such call is closed once
 * with END.0504, billed once, and reported once by status callback.
 */
describe('e2e: crash with calls up, then restart', function () {
  this.timeout(120000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-crash-'));
  const PORTS = allocateSwitchPorts();
  const CARRIER = nextPort();
  const SINK = nextPort();
  const env = {
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
  const server = new AccountServer();
  let sw: SwitchProcess | undefined;
  let sipp: SippRun | undefined;
  let db: Db;

  after(async () => {
    sipp?.kill();
    await sw?.stop('SIGKILL');
    for (const pid of pidsMatching(`rtpengine.*--listen-ng=127.0.0.1:${PORTS.ng}( |$)`)) process.kill(pid, 'SIGKILL');
    await server.close();
    await db?.destroy();
  });

  it('closes each call once with END.0504, bills it once and reports it once', async () => {
    await server.listen();
    server.verbs('/hold', '<Response><Pause length="120"/></Response>');
    sw = await startSwitch(env);
    db = openDb({ databaseUrl: '', dataDir });
    await setRate(db, 'outbound', 100);
    const acct = await createAccountWithDid(db, '+254711400001');
    await db('accounts')
      .where({ id: acct.id })
      .update({ webhook_status: server.url('/status') });
    await addCarrier(db, CARRIER);
    await new Promise((r) => setTimeout(r, 2500)); // the running switch re-reads trunks within 2 s
    sipp = carrier({ port: CARRIER, sink: SINK, calls: 2 });
    await waitForBound(CARRIER); // SIPp's port
    const uuids: string[] = [];
    for (const to of ['+254722000101', '+254722000102']) {
      const res = await api(sw.baseUrl, acct.key, 'POST', '/api/calls/originate', {
        to,
        from: acct.did,
        url: server.url('/hold'),
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      uuids.push(res.body.uuid);
    }
    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0200').length === 2,
      15000,
      'both answered',
    );
    // Old enough for the start-up sweep (it leaves calls younger than 10 s to their owner).
    await new Promise((r) => setTimeout(r, 11000));

    await sw.stop('SIGKILL');
    for (const id of uuids)
      assert.equal((await db('calls').where({ id }).first()).status, 'answered', 'still live in the store');
    sw = await startSwitch(env);

    await server.waitFor(
      () => server.statusEvents().filter((c) => c === 'CALL.0300').length >= 2,
      20000,
      'both reported',
    );
    await new Promise((r) => setTimeout(r, 1500)); // nothing more arrives
    for (const id of uuids) {
      const call = await db('calls').where({ id }).first();
      assert.equal(call.reason_code, 'END.0504');
      assert.equal(call.status, 'completed');
      assert.ok(call.ended_at);
      const charges = await db('wallet_transactions').where({ call_id: id, kind: 'call' });
      assert.ok(charges.length <= 1, `billed once: ${charges.length} rows`);
      assert.equal(
        Number(call.cost_cents),
        charges.reduce((s, r) => s + Number(r.amount_cents), 0),
      );
      const sid = call.sid;
      const reports = server.requests.filter((r) => r.json?.sid === sid && r.json?.code === 'CALL.0300');
      assert.equal(new Set(reports.map((r) => r.json.id)).size, 1, 'reported once (retries share an id)');
    }
  });
});
