/**
 * Issue 17 "done when", numbers: baresip (a real softphone, in its own network namespace) dials `0712345678` as
 * people write it and the carrier receives `+254712345678`; with a zero balance the same number is refused and
 * `112` still reaches the emergency route, flagged on its CDR and not billed. The scenario runs in
 * numbers-baresip-peer.ts, inside the namespace.
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable } from '../../support/netns-peer.js';

interface Cdr {
  direction: string;
  status: string;
  to_number: string;
  from_number: string;
  reason_code: string | null;
  emergency: number | boolean;
}
interface Report {
  national: { log: string; webhookTo?: string; carrierInvites: Array<{ ruri: string; from: string }>; cdr?: Cdr };
  refused: { log: string; cdr?: Cdr; carrierInvites: unknown[] };
  emergency: {
    log: string;
    psapExit: unknown;
    psapInvites: Array<{ ruri: string; from: string }>;
    cdr?: Cdr;
    events: string[];
    wallet: number;
  };
}

(namespacePeersUsable ? describe : describe.skip)(
  'e2e: numbers and emergency calls from baresip (network namespace)',
  function () {
    this.timeout(120000);
    const peer = namespacePeer<Report>(import.meta.url, 'numbers-baresip-peer.ts');
    let r: Report;
    before(async () => {
      r = await peer();
    });

    it('0712345678 from the phone reaches the webhook and the carrier as +254712345678', () => {
      assert.equal(r.national.webhookTo, '+254712345678', r.national.log);
      assert.equal(r.national.carrierInvites.length, 1, r.national.log);
      assert.match(r.national.carrierInvites[0].ruri, /^sip:\+254712345678@/);
      assert.equal(r.national.cdr?.to_number, '+254712345678');
    });

    it('with a zero balance the same number is refused (BILL.0402) and no carrier sees it', () => {
      assert.equal(r.refused.cdr?.status, 'failed', r.refused.log);
      assert.equal(r.refused.cdr?.reason_code, 'BILL.0402');
      assert.equal(r.refused.carrierInvites.length, 0);
    });

    it('112 with a zero balance reaches the emergency route with the DID as caller, flagged and not billed', () => {
      assert.equal(r.emergency.psapInvites.length, 1, r.emergency.log);
      assert.match(r.emergency.psapInvites[0].ruri, /^sip:112@/);
      assert.match(r.emergency.psapInvites[0].from, /sip:\+254700000451@/);
      assert.equal(r.emergency.cdr?.to_number, '112');
      assert.ok(r.emergency.cdr?.emergency, 'the CDR carries the emergency flag');
      assert.equal(r.emergency.cdr?.status, 'completed', JSON.stringify(r.emergency.cdr));
      assert.ok(r.emergency.events.includes('ROUTE.0100'), r.emergency.events.join(','));
      assert.equal(r.emergency.wallet, 0, 'nothing billed');
    });
  },
);
