/**
 * A real softphone registers: baresip 1.0.0 with the whole phone token as its password, through the switch as
 * outbound proxy. baresip will not start on `lo` alone, so the registrar and the phone run together in a private
 * network namespace (registrar-baresip-peer.ts, test/support/netns-peer.ts); the peer prints a JSON line.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { namespacePeersUsable as usable, runNamespacePeer } from '../support/netns-peer.js';

const PEER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'registrar-baresip-peer.ts');

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
  return runNamespacePeer<PeerReport>(PEER, { REG_PORT: String(port), REG_DIR: dir, REG_ALGS: algorithms }, children);
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
