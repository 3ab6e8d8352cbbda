/**
 * Issue 19 "done when", forking: two baresip phones (real softphones, in a network namespace) registered as one
 * extension both ring; the one that answers hears the caller; the other stops ringing with a CANCEL that carries
 * `Reason: SIP;cause=200;text="Call completed elsewhere"` (seen with tcpdump on its port). The scenario runs in
 * forking-baresip-peer.ts, inside the namespace.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable } from '../../support/netns-peer.js';

interface Report {
  registered: boolean;
  callError?: string;
  heardSeconds: number;
  answeringLog: string;
  ringingLog: string;
  ringingInvited: boolean;
  cancel: string;
  ringingAnswered: boolean;
  cdr?: { direction: string; status: string; reason_code: string };
}

(namespacePeersUsable ? describe : describe.skip)(
  'e2e: two baresip phones on one extension (network namespace)',
  function () {
    this.timeout(120000);
    const peer = namespacePeer<Report>(import.meta.url, 'forking-baresip-peer.ts');
    let r: Report;
    before(async () => {
      r = await peer();
    });

    it('both phones register and both are rung', () => {
      assert.ok(r.registered, `${r.answeringLog}\n${r.ringingLog}`);
      assert.equal(r.callError, undefined, r.answeringLog);
      assert.ok(r.ringingInvited, `the ringing phone got no INVITE: ${r.ringingLog}`);
      assert.match(r.ringingLog, /incoming call/i, r.ringingLog);
    });

    it('the phone that answers hears the caller', () => {
      assert.ok(r.heardSeconds >= 1, `the answering phone heard ${r.heardSeconds} s: ${r.answeringLog}`);
      assert.equal(r.cdr?.status, 'completed', JSON.stringify(r.cdr));
      assert.equal(r.cdr?.direction, 'internal');
    });

    it('the other stops ringing: CANCEL with Reason "Call completed elsewhere", never answered', () => {
      assert.match(r.cancel, /^CANCEL sip:/m, r.ringingLog);
      assert.match(r.cancel, /Reason: SIP;cause=200;text="Call completed elsewhere"/, r.cancel);
      assert.equal(r.ringingAnswered, false);
    });
  },
);
