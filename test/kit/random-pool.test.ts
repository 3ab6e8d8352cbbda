import { strict as assert } from 'node:assert';
import { RandomPool } from '../../kit/index.js';

describe('kit: RandomPool', () => {
  it('hands out each byte of a block once, then draws a new block', () => {
    const pool = new RandomPool(64);
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) seen.add(pool.hex(8)); // five blocks' worth
    assert.equal(seen.size, 40, 'no two takes alike');
    for (const h of seen) assert.match(h, /^[0-9a-f]{16}$/);
  });

  it('a take that does not fit what is left of the block comes from a new one, whole', () => {
    const pool = new RandomPool(16);
    pool.take(10);
    const b = pool.take(10);
    assert.equal(b.length, 10);
  });

  it('refuses a take larger than its block', () => {
    assert.throws(() => new RandomPool(16).take(17), /17 bytes asked of a 16-byte block/);
  });
});
