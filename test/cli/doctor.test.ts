import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestSwitch } from '../e2e/support/harness.js';
import { nextPort } from '../support/ports.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const run = promisify(execFile);

interface Finding {
  check: string;
  verdict: 'ok' | 'warn' | 'fail';
  detail: string;
}

/** `bin/simu doctor --json` as an operator runs it: its findings and exit code. */
async function doctor(env: Record<string, string>): Promise<{ code: number; findings: Finding[]; stderr: string }> {
  try {
    const r = await run(path.join(ROOT, 'bin', 'simu'), ['doctor', '--json'], { env: { ...process.env, ...env } });
    return { code: 0, findings: JSON.parse(r.stdout), stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, findings: JSON.parse(err.stdout), stderr: err.stderr };
  }
}

const verdictOf = (findings: Finding[], check: string) => findings.find((f) => f.check === check)?.verdict;

/**
 * No check fails but the clock's, which is the test box's own (a box without NTP fails it), and the exit code
 * says whether any did.
 */
function assertPasses(r: { code: number; findings: Finding[] }): void {
  const failed = r.findings.filter((f) => f.verdict === 'fail');
  assert.deepEqual(
    failed.filter((f) => f.check !== 'clock'),
    [],
  );
  assert.equal(r.code, failed.length > 0 ? 2 : 0);
}

describe('operator CLI: simu doctor', function () {
  this.timeout(90000);

  it('a fresh box: nothing fails (the store and certificate are made at first start)', async () => {
    const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'simu-doctor-')), 'data');
    const r = await doctor({ SIMU_DATA_DIR: dir, SIMU_SIP_PORT: String(nextPort()), SIMU_SIP_HOST: '127.0.0.1' });
    assertPasses(r);
    assert.equal(verdictOf(r.findings, 'store'), 'warn');
    assert.equal(verdictOf(r.findings, 'SIP port'), 'ok');
    assert.equal(verdictOf(r.findings, 'data directory'), 'warn');
  });

  it('a running switch: it answers OPTIONS, its rtpengine its ping, its store is current', async () => {
    const ctx = await startTestSwitch();
    try {
      // The process that runs the switch names itself, as main.ts does.
      writeFileSync(path.join(ctx.config.dataDir, 'simu.pid'), `${process.pid}\n`);
      const r = await doctor({
        SIMU_DATA_DIR: ctx.config.dataDir,
        SIMU_SIP_HOST: '127.0.0.1',
        SIMU_SIP_PORT: String(ctx.ports.sip),
        SIMU_RTPENGINE_NG_PORT: String(ctx.ports.ng),
        SIMU_SIP_TLS_PORT: '0',
        SIMU_SIP_WSS_PORT: '0',
      });
      const sip = r.findings.find((f) => f.check === 'SIP port')!;
      assert.equal(sip.verdict, 'ok', sip.detail);
      assert.match(sip.detail, /answers OPTIONS \(SIP\/2\.0 200/);
      assert.equal(verdictOf(r.findings, 'rtpengine'), 'ok');
      assert.equal(r.findings.find((f) => f.check === 'store')!.detail, 'reachable, migrations current');
      assert.equal(verdictOf(r.findings, 'TLS certificate'), undefined, 'no TLS transport, no certificate check');
      assertPasses(r);
    } finally {
      await ctx.sw.stop();
    }
  });

  it("a SIP port another process holds and a key that is not the certificate's fail; exit 2", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-doctor-'));
    const port = nextPort();
    const holder: Server = await new Promise((resolve) => {
      const s = createServer().listen(port, '127.0.0.1', () => resolve(s));
    });
    try {
      const pem = (name: string) => path.join(dir, name);
      for (const k of ['a', 'b'])
        execFileSync('openssl', ['genrsa', '-out', pem(`${k}.key`), '2048'], { stdio: 'ignore' });
      execFileSync(
        'openssl',
        ['req', '-x509', '-key', pem('a.key'), '-out', pem('a.crt'), '-days', '30', '-subj', '/CN=sip.example.net'],
        {
          stdio: 'ignore',
        },
      );
      const r = await doctor({
        SIMU_DATA_DIR: dir,
        SIMU_SIP_HOST: '127.0.0.1',
        SIMU_SIP_PORT: String(port),
        SIMU_SIP_TLS_CERT: pem('a.crt'),
        SIMU_SIP_TLS_KEY: pem('b.key'),
      });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /\d checks failed \(DOCTOR_FAILED\)/);
      assert.match(r.findings.find((f) => f.check === 'SIP port')!.detail, /taken by another process/);
      assert.match(r.findings.find((f) => f.check === 'TLS certificate')!.detail, /is not the key of/);
    } finally {
      holder.close();
    }
  });
});
