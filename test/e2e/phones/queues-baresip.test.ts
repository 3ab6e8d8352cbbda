/**
 * Issue 18 item 2 with the agent the issue names: baresip (a real softphone, registered as an end-user in its own
 * network namespace) calls out, its outbound document is <Dial><Queue>, and it is bridged to the caller that waited
 * longest of three SIPp callers (440, 660, 880 Hz): what baresip decoded holds 440 Hz, not the others; that caller's
 * action gets QueueResult bridged and a QueueTime right within a second. Runs in queues-baresip-peer.ts.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable as usable } from '../../support/netns-peer.js';

interface Report {
  log: string;
  dec: string | null;
  heard: Record<string, number>;
  heardSeconds: Record<string, number>;
  firstCaller: string;
  left: { CallSid: string; QueueResult: string; QueueTime: number } | null;
  expectedQueueTime: number | null;
}

(usable ? describe : describe.skip)('e2e: a baresip agent dials a queue (network namespace)', function () {
  this.timeout(120000);
  const peer = namespacePeer<Report>(import.meta.url, 'queues-baresip-peer.ts');

  it('baresip is bridged to the longest-waiting caller; QueueTime is right within a second', async () => {
    const r = await peer();
    if (process.env.SIMU_TEST_FIGURES)
      console.log({ heard: r.heard, seconds: r.heardSeconds, left: r.left, expected: r.expectedQueueTime });
    assert.ok(r.dec, `baresip wrote what it heard: ${r.log}`);
    const { 660: b, 880: c } = r.heard as Record<number, number>;
    const figures = JSON.stringify({ heard: r.heard, seconds: r.heardSeconds });
    // Heard for at least a second of the 3 s stretch, judged 50 ms at a time; the others not even faintly.
    assert.ok(r.heardSeconds[440]! >= 1, `baresip hears the first caller's 440 Hz: ${figures}`);
    assert.ok(b! < 100 && c! < 100, `and not the others: ${figures}`);
    assert.equal(r.left?.CallSid, r.firstCaller);
    assert.equal(r.left?.QueueResult, 'bridged');
    assert.ok(Math.abs(r.left!.QueueTime - r.expectedQueueTime!) <= 1, JSON.stringify(r));
  });
});
