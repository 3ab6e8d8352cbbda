import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { HmacSha256 } from '../../../sip/stack/auth/hmac.js';

describe('HmacSha256 (RFC 2104 over one-shot hashes)', () => {
  it('RFC 4231 test case 2 (key "Jefe")', () => {
    const h = new HmacSha256(Buffer.from('Jefe'));
    const hex = Buffer.from(h.tag('what do ya want for nothing?'), 'base64url').toString('hex');
    assert.equal(hex, '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });

  it('the same tag as createHmac for any key up to a block and any message, long ones and non-ASCII too', () => {
    for (let i = 0; i < 2000; i++) {
      const key = randomBytes(1 + (i % 64));
      const h = new HmacSha256(key);
      const len = i % 300;
      const text =
        i % 3 === 0
          ? randomBytes(len).toString('base64url').slice(0, len)
          : Array.from({ length: len % 140 }, (_, j) => String.fromCharCode(32 + ((i * 7 + j * 13) % 2000))).join('');
      for (const t of [text, `${text}.x`, '']) {
        assert.equal(h.tag(t), createHmac('sha256', key).update(t).digest('base64url'), `key ${i}, ${t.length} chars`);
      }
    }
  });

  it('three-byte characters up to the scratch space and past it (the fallback)', () => {
    const key = randomBytes(32);
    const h = new HmacSha256(key);
    for (const n of [127, 128, 129, 400]) {
      const t = '\u20ac'.repeat(n);
      assert.equal(h.tag(t), createHmac('sha256', key).update(t).digest('base64url'), `${n} euro signs`);
    }
  });

  it('refuses a key longer than one block', () => {
    assert.throws(() => new HmacSha256(randomBytes(65)), RangeError);
  });
});
