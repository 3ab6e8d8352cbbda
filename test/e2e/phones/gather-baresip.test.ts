/**
 * A real softphone presses keys into a Gather: baresip 1.0.0 calls a DID as the carrier's caller and sends 4, 2, #
 * (RFC 4733, its `sndcode` command). baresip will not start on `lo` alone, so the switch and the phone run
 * together in a private network namespace (gather-baresip-peer.ts); the peer prints a JSON line.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable as usable } from '../../support/netns-peer.js';

(usable ? describe : describe.skip)('e2e: baresip presses keys into a Gather (network namespace)', function () {
  this.timeout(60000);
  const peer = namespacePeer<{ listening: boolean; digits: string | null; log: string }>(
    import.meta.url,
    'gather-baresip-peer.ts',
  );

  it('baresip keys 4, 2, # reach the action as Digits 42', async () => {
    const r = await peer();
    assert.equal(r.listening, true, r.log);
    assert.equal(r.digits, '42', r.log);
  });
});
