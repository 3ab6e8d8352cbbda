/**
 * Issue 19 item 2 "done when": a real softphone transfers a call. baresip 1.0.0 (B) answers a call from A and
 * transfers it blind with its own `/transfer` command (REFER); baresip C rings, answers and hears A. baresip will
 * not start on `lo` alone, so the switch and the phones run together in a private network namespace
 * (transfer-baresip-peer.ts); the peer prints a JSON line.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable as usable } from '../../support/netns-peer.js';

interface Report {
  registered: boolean;
  callError?: string;
  transferred: boolean;
  heardSeconds: number;
  exts: { a: string; b: string; c: string };
  calls: Array<{
    id: string;
    parent: string | null;
    direction: string;
    from: string;
    to: string;
    status: string;
    reason: string;
    events: string[];
  }>;
  pstn?: string;
  bLog: string;
  cLog: string;
}

(usable ? describe : describe.skip)('e2e: baresip transfers a call (network namespace)', function () {
  this.timeout(90000);
  const peer = namespacePeer<Report>(import.meta.url, 'transfer-baresip-peer.ts');
  /** What every transfer shows: registered, transferred, the target heard the caller; the parent CDR and its new leg. */
  const transferred = (r: Report) => {
    const why = JSON.stringify({ ...r, bLog: r.bLog.slice(-1500), cLog: r.cLog.slice(-800) });
    assert.equal(r.registered, true, why);
    assert.equal(r.callError, undefined, why);
    assert.equal(r.transferred, true, why);
    assert.ok(r.heardSeconds >= 1, `the target heard ${r.heardSeconds} s of speech; ${why}`);
    const parent = r.calls.find((c) => c.parent === null);
    const child = r.calls.find((c) => c.parent === parent?.id);
    assert.ok(parent && child, why);
    return { why, parent, child };
  };

  it("blind: baresip's /transfer moves the caller to a third phone, which hears it; the CDRs show the new leg with parent_call_id", async () => {
    const r = await peer();
    const { why, parent, child } = transferred(r);
    assert.deepEqual([parent.direction, parent.from, parent.to], ['internal', r.exts.a, r.exts.b]);
    // The new leg is the transferred caller's (A) to the target (C).
    assert.deepEqual([child.direction, child.from, child.to], ['internal', r.exts.a, r.exts.c]);
    assert.equal(child.status, 'completed', why);
    assert.ok(parent.events.includes('XFER.0200'), why);
    assert.deepEqual(child.events, ['CALL.0100', 'CALL.0180', 'CALL.0200', 'CALL.0300']);
  });

  it('an IVR-answered PSTN call Dialed to a phone is transferred by that phone to another extension, which hears the caller', async () => {
    const r = await peer({ XFER_MODE: 'ivr' });
    const { why, parent, child } = transferred(r);
    assert.equal(parent.direction, 'inbound', why);
    assert.deepEqual([child.direction, child.from, child.to], ['internal', parent.from, r.exts.c]);
    assert.equal(child.status, 'completed', why);
    assert.ok(parent.events.includes('DIAL.0200') && parent.events.includes('XFER.0200'), why);
    // The Dial goes on with the new leg: DIAL.0300 comes after the transfer, when the target hangs up.
    assert.ok(parent.events.indexOf('DIAL.0300') > parent.events.indexOf('XFER.0200'), why);
  });

  // Known gap, not a switch failure: baresip 1.0.0 (Debian's baresip-core) has only blind transfer: its command
  // list has `transfer` and no attended commands (`atransferstart`/`atransferexec` came in later baresip), and it
  // never sends Replaces. Attended transfer is proven with a phone on our own stack (transfer.test.ts, "attended").
  it.skip('attended: baresip consults the target and completes the transfer (needs baresip >= 2.x attended commands)');
});
