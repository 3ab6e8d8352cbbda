import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { allocateSwitchPorts } from '../support/harness.js';
import { startSwitch, pidsMatching, type SwitchProcess } from '../support/switch-process.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

/** `npm start` runs the compiled switch: `npm run build` writes dist/, and node alone runs it, no TypeScript loader. */
describe('the compiled switch (npm run build, node dist/main.js)', function () {
  this.timeout(180000);
  const PORTS = allocateSwitchPorts();
  const env = {
    SIMU_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'simu-compiled-')),
    SIMU_HTTP_PORT: String(PORTS.http),
    SIMU_SIP_PORT: String(PORTS.sip),
    SIMU_SIP_TLS_PORT: '0',
    SIMU_SIP_WS_PORT: '0',
    SIMU_SIP_WSS_PORT: '0',
    SIMU_RTPENGINE_NG_PORT: String(PORTS.ng),
    SIMU_RTPENGINE_DTMF_PORT: String(PORTS.dtmf),
    SIMU_RTP_PORT_MIN: String(PORTS.rtpMin),
    SIMU_RTP_PORT_MAX: String(PORTS.rtpMax),
  };
  let sw: SwitchProcess | undefined;

  after(async () => {
    await sw?.stop('SIGKILL');
    for (const pid of pidsMatching(`rtpengine.*--listen-ng=127.0.0.1:${PORTS.ng}( |$)`)) process.kill(pid, 'SIGKILL');
  });

  it('builds dist/ and the built switch serves the API, the docs, the console, SIP.js and the verbs schema', async () => {
    execFileSync(process.execPath, ['scripts/build.js'], { cwd: ROOT, stdio: 'pipe' });
    assert.ok(existsSync(path.join(ROOT, 'dist', 'main.js')));
    sw = await startSwitch(env, 30000, { compiled: true });
    assert.doesNotMatch(sw.output(), /tsx/);
    const key = /API key \(shown only now[^:]*\): (sk_\S+)/.exec(sw.output())?.[1];
    assert.ok(key, sw.output());
    const auth = { authorization: `Bearer ${key}` };
    assert.equal((await fetch(`${sw.baseUrl}/api/health/`)).status, 200);
    assert.equal((await fetch(`${sw.baseUrl}/api/account/`, { headers: auth })).status, 200);
    assert.equal((await fetch(`${sw.baseUrl}/docs/events.md`)).status, 200);
    const console = await fetch(`${sw.baseUrl}/console/`);
    assert.equal(console.status, 200);
    assert.match(await console.text(), /<html/i);
    // The softphone's library comes from node_modules, linked beside dist/.
    const sipjs = await fetch(`${sw.baseUrl}/portal/vendor/sip.js/index.js`);
    assert.equal(sipjs.status, 200);
    assert.match(await sipjs.text(), /export/);
    assert.doesNotMatch(sw.output(), /ENOENT|Cannot find module/);
    // The verbs XSD is a file beside its module, read on the first parse.
    const verbs = (await import(
      path.join(ROOT, 'dist', 'verbs', 'index.js')
    )) as typeof import('../../../verbs/index.js');
    assert.equal(verbs.parseVerbDocument('<Response><Say>hi</Say></Response>').verbs.length, 1);
  });
});
