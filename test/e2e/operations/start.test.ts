import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort } from '../../support/ports.js';
import { ACCOUNT } from '../../api/shapes.js';
import { eventually } from '../../support/wait.js';
import { allocateSwitchPorts } from '../support/harness.js';
import { startSwitch, pidsMatching, type SwitchProcess } from '../support/switch-process.js';

/** The foundation's "done when": a fresh data directory reaches a healthy switch whose printed key works. */
describe('the switch process (npm start)', function () {
  this.timeout(90000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'simu-start-'));
  const PORTS = allocateSwitchPorts();
  const env = {
    SIMU_DATA_DIR: dataDir,
    SIMU_HTTP_PORT: String(PORTS.http),
    SIMU_SIP_PORT: String(PORTS.sip),
    SIMU_SIP_TLS_PORT: String(nextPort()),
    SIMU_SIP_WS_PORT: String(nextPort()),
    SIMU_SIP_WSS_PORT: String(nextPort()),
    SIMU_RTPENGINE_NG_PORT: String(PORTS.ng),
    SIMU_RTPENGINE_DTMF_PORT: String(PORTS.dtmf),
    SIMU_RTP_PORT_MIN: String(PORTS.rtpMin),
    SIMU_RTP_PORT_MAX: String(PORTS.rtpMax),
  };
  const enginePattern = `rtpengine.*--listen-ng=127.0.0.1:${PORTS.ng}( |$)`;
  let sw: SwitchProcess | undefined;

  after(async () => {
    await sw?.stop('SIGKILL');
    for (const pid of pidsMatching(enginePattern)) process.kill(pid, 'SIGKILL');
  });

  it('first run prints a demo API key once that answers GET /api/account/ with the Account shape', async () => {
    sw = await startSwitch(env);
    const key = /API key \(shown only now[^:]*\): (sk_\S+)/.exec(sw.output())?.[1];
    assert.ok(key, sw.output());
    const res = await fetch(`${sw.baseUrl}/api/account/`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const body = await res.json();
    // The spec's fields, and sip_domain (beyond the spec: the domain its phones register to, docs/api.md).
    assert.deepEqual(Object.keys(body).sort(), Object.keys(ACCOUNT).sort());
    assert.match(body.sip_domain, /^[a-z0-9-]+\./);
    assert.equal(body.status, 'active');
    assert.match(body.wallet_balance, /^\d+\.\d{2}$/);
    const health = await fetch(`${sw.baseUrl}/api/health/`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
  });

  it('killing rtpengine turns health to degraded, and the supervisor brings it back to ok', async () => {
    const [pid] = pidsMatching(enginePattern);
    assert.ok(pid, 'the supervised rtpengine runs');
    process.kill(pid, 'SIGKILL');
    const seen: number[] = [];
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      const r = await fetch(`${sw!.baseUrl}/api/health/`);
      const body = await r.json();
      if (r.status === 503) assert.deepEqual(body, { status: 'degraded' });
      if (seen[seen.length - 1] !== r.status) seen.push(r.status);
      if (seen.includes(503) && r.status === 200) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.deepEqual(seen.slice(-2), [503, 200], `health went ${seen.join(' -> ')}`);
    const [newPid] = pidsMatching(enginePattern);
    assert.ok(newPid && newPid !== pid, 'a new rtpengine was started');
  });

  it('SIGTERM stops the switch and leaves no rtpengine behind; a second start prints no key', async () => {
    const code = await sw!.stop('SIGTERM');
    assert.equal(code, 0);
    // The engine's exit is not instant: wait for it (3 s) rather than for a fixed 300 ms, then assert.
    await eventually(() => pidsMatching(enginePattern).length === 0, 'rtpengine to exit', 3000).catch(() => undefined);
    assert.deepEqual(pidsMatching(enginePattern), []);
    sw = await startSwitch(env);
    assert.doesNotMatch(sw.output(), /sk_/);
    await sw.stop('SIGTERM');
    sw = undefined;
  });
});
