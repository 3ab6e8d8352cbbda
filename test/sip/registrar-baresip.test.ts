/**
 * A real softphone registers: baresip 1.0.0 with the whole phone token as its password, through the switch as
 * outbound proxy. baresip will not start on `lo` alone, so the registrar and the phone run together in a private
 * network namespace (registrar-baresip-peer.ts, /work/shared/TESTING-WITH-PEERS.md); the peer prints a JSON line.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PEER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'registrar-baresip-peer.ts');
const usable =
  process.getuid?.() === 0 &&
  spawnSync('which', ['baresip']).status === 0 &&
  spawnSync('which', ['unshare']).status === 0;

interface PeerReport {
  registered: boolean;
  contact?: string;
  state?: string;
  lastRegisteredAt?: string | null;
  events: string[];
  statuses: number[];
  log: string;
}

function runPeer(port: number, algorithms: string, children: Set<ChildProcess>): Promise<PeerReport> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-baresip-'));
  const script = [
    'set -e',
    'ip link set lo up',
    'ip link add v0 type veth peer name v1',
    'ip addr add 10.77.0.1/24 dev v0; ip addr add 10.77.0.2/24 dev v1',
    'ip link set v0 up; ip link set v1 up',
    `exec node --import tsx ${PEER}`,
  ].join('\n');
  const child = spawn('unshare', ['-n', 'bash', '-c', script], {
    env: { ...process.env, REG_PORT: String(port), REG_DIR: dir, REG_ALGS: algorithms },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (err += String(d)));
  return new Promise((resolve, reject) =>
    child.on('exit', () => {
      children.delete(child);
      const line = out.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(line) as PeerReport);
      } catch {
        reject(new Error(`peer printed no report: ${out.slice(-500)} ${err.slice(-1000)}`));
      }
    }),
  );
}

(usable ? describe : describe.skip)('sip/registrar with baresip as the phone (network namespace)', function () {
  this.timeout(30000);
  const children = new Set<ChildProcess>();
  after(() => {
    for (const c of children) if (c.pid) process.kill(c.pid, 'SIGKILL');
  });

  it('baresip registers with the phone token as digest password: 401, 200, state registered, AUTH.0200', async () => {
    const r = await runPeer(22003, 'MD5', children);
    assert.deepEqual(r.statuses, [401, 200], r.log);
    assert.equal(r.registered, true);
    assert.match(r.contact ?? '', /^sip:1001-.*@127\.0\.0\.1:22033$/);
    assert.equal(r.state, 'registered');
    assert.ok(r.lastRegisteredAt);
    assert.deepEqual(r.events, ['AUTH.0200']);
  });

  it('why MD5 alone is the default: baresip 1.0.0 gives up on a challenge that also offers SHA-256', async () => {
    const r = await runPeer(22004, 'MD5,SHA-256', children);
    assert.equal(r.registered, false);
    assert.match(r.log, /Register: Function not implemented/);
  });
});
