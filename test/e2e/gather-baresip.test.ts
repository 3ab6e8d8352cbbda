/**
 * A real softphone presses keys into a Gather: baresip 1.0.0 calls a DID as the carrier's caller and sends 4, 2, #
 * (RFC 4733, its `sndcode` command). baresip will not start on `lo` alone, so the switch and the phone run
 * together in a private network namespace (gather-baresip-peer.ts); the peer prints a JSON line.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { namespacePeersUsable as usable, runNamespacePeer } from '../support/netns-peer.js';

const PEER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'gather-baresip-peer.ts');

(usable ? describe : describe.skip)('e2e: baresip presses keys into a Gather (network namespace)', function () {
  this.timeout(60000);
  const children = new Set<ChildProcess>();
  after(() => {
    for (const c of children) if (c.pid) process.kill(c.pid, 'SIGKILL');
  });

  it('baresip keys 4, 2, # reach the action as Digits 42', async () => {
    const r = await runNamespacePeer<{ listening: boolean; digits: string | null; log: string }>(PEER, {}, children);
    assert.equal(r.listening, true, r.log);
    assert.equal(r.digits, '42', r.log);
  });
});
