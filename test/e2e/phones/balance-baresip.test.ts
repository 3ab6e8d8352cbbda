/**
 * Issue 23, item 2, "done when": a baresip phone dials *100# and hears its balance: the project's speech Gather
 * engine recognises the English sentence, and by duration and energy what it heard holds about as much speech as
 * the switch's sentence (the Swahili one too, which the engine has no model for); unbilled, and not refused with a
 * zero balance. baresip and the switch run in a network namespace (balance-baresip-peer.ts).
 */
import assert from 'node:assert/strict';
import { namespacePeer, namespacePeersUsable } from '../../support/netns-peer.js';

interface Heard {
  log: string;
  heardSeconds: number;
  expectedSeconds: number;
  recognised: { transcript: string; confidence: number } | null;
  cdr?: { direction: string; status: string; to_number: string; cost_cents: number; reason_code: string | null };
  ledger: number;
  balanceAfter?: number;
}

(namespacePeersUsable ? describe : describe.skip)('e2e: the balance by voice from baresip (*100#)', function () {
  this.timeout(120000);
  const peer = namespacePeer<{ rich: Heard; broke: Heard }>(import.meta.url, 'balance-baresip-peer.ts');
  let r: { rich: Heard; broke: Heard };
  before(async () => {
    r = await peer();
  });

  const heardTheSentence = (h: Heard) => {
    assert.ok(h.expectedSeconds > 1, `the sentence holds speech: ${h.expectedSeconds}`);
    const ratio = h.heardSeconds / h.expectedSeconds;
    assert.ok(ratio > 0.7 && ratio < 1.3, `heard ${h.heardSeconds} s of ${h.expectedSeconds} s\n${h.log}`);
  };

  it('with 1,200.50 KES the phone hears the sentence, and the call is neither billed nor charged', () => {
    heardTheSentence(r.rich);
    // The speech Gather engine hears "your balance is" in it, among other sentences of the switch.
    assert.equal(r.rich.recognised?.transcript, 'your balance is', JSON.stringify(r.rich.recognised));
    assert.equal(r.rich.cdr?.direction, 'internal');
    assert.equal(r.rich.cdr?.to_number, '*100#');
    assert.equal(r.rich.cdr?.status, 'completed');
    assert.equal(Number(r.rich.cdr?.cost_cents), 0);
    assert.equal(r.rich.ledger, 0);
    assert.equal(r.rich.balanceAfter, 120050);
  });

  it('with a zero balance it is still answered, in the account’s language (Swahili)', () => {
    heardTheSentence(r.broke);
    assert.equal(r.broke.cdr?.status, 'completed', r.broke.log);
    assert.equal(r.broke.ledger, 0);
  });
});
