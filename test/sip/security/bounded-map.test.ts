import assert from 'node:assert/strict';
import { GenerationalMap } from '../../../sip/security/bounded-map.js';

describe('sip/security: GenerationalMap (bounded counters keyed by attacker-chosen values)', () => {
  it('never holds more than its bound, and keeps a key that keeps being touched', () => {
    const m = new GenerationalMap<number>(100);
    m.set('busy', 0);
    for (let i = 0; i < 10_000; i++) {
      m.set(`spoofed-${i}`, i);
      if (i % 40 === 0) assert.equal(m.get('busy'), 0, `busy key lost at ${i}`);
      assert.ok(m.size <= 100);
    }
    assert.equal(m.get('spoofed-0'), undefined, 'an untouched old key is gone');
    assert.equal(m.get('spoofed-9999'), 9999);
    assert.equal(m.evicted + m.size, 10_001);
  });

  it('deleteWhere and delete reach both generations', () => {
    const m = new GenerationalMap<number>(4);
    for (let i = 0; i < 4; i++) m.set(`k${i}`, i); // k0,k1 old; k2,k3 young
    assert.equal(
      m.deleteWhere((v) => v % 2 === 0),
      2,
    );
    assert.deepEqual([...m.entries()].map(([k]) => k).sort(), ['k1', 'k3']);
    assert.equal(m.delete('k1'), true);
    assert.equal(m.delete('k1'), false);
    assert.equal(m.size, 1);
  });
});
