/**
 * Issue 19 "done when", message waiting with a real softphone: baresip (its mwi module, in its own network
 * namespace) subscribes to message-summary with its phone token; after a SIPp caller leaves Bob a message the
 * switch NOTIFYs it Messages-Waiting: yes and baresip takes it (answers 200, shows it). The scenario runs in
 * mwi-baresip-peer.ts, inside the namespace.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable } from '../../support/netns-peer.js';

interface Report {
  subscribed: boolean;
  callerExit: number | null;
  messages: number;
  stillSubscribed: boolean;
  log: string;
}

(namespacePeersUsable ? describe : describe.skip)('e2e: message waiting on baresip (network namespace)', function () {
  this.timeout(120000);
  const peer = namespacePeer<Report>(import.meta.url, 'mwi-baresip-peer.ts');
  let r: Report;
  before(async () => {
    r = await peer();
  });

  it('baresip subscribes to message-summary with its phone token', () => {
    assert.ok(r.subscribed, r.log);
  });

  it('a message left for Bob is NOTIFYed to baresip as Messages-Waiting: yes, and baresip takes it', () => {
    assert.equal(r.callerExit, 0);
    assert.equal(r.messages, 1);
    assert.ok(r.stillSubscribed, `baresip answered the NOTIFY 2xx\n${r.log}`);
    // baresip's mwi module prints each NOTIFY's body: first the empty mailbox, then the message.
    assert.match(r.log, /MWI for [^\n]*\nMessages-Waiting: no\r?\n[^]*Voice-Message: 0\/0/, r.log);
    assert.match(r.log, /MWI for [^\n]*\nMessages-Waiting: yes\r?\n[^]*Voice-Message: 1\/0/, r.log);
  });
});
