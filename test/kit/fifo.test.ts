import { strict as assert } from 'node:assert';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Fifo } from '../../kit/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

describe('kit: Fifo', () => {
  it('gives items back oldest first, across compactions, and clear returns what is left in order', () => {
    const q = new Fifo<number>();
    let next = 0;
    const taken: number[] = [];
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 200; i++) q.push(next++);
      for (let i = 0; i < 150; i++) taken.push(q.shift()!);
    }
    assert.deepEqual(
      taken,
      Array.from({ length: 4500 }, (_, i) => i),
    );
    assert.equal(q.length, 1500);
    assert.equal(q.peek(), 4500);
    assert.deepEqual(
      q.clear(),
      Array.from({ length: 1500 }, (_, i) => 4500 + i),
    );
    assert.equal(q.length, 0);
    assert.equal(q.shift(), undefined);
    assert.equal(q.peek(), undefined);
  });

  it('keeps nothing it gave back reachable', async () => {
    const q = new Fifo<object>();
    const held = ((): WeakRef<object> => {
      const first = { big: new Array(1000).fill(1) };
      q.push(first);
      return new WeakRef(first);
    })();
    q.push({});
    q.push({});
    q.shift();
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(held.deref(), undefined);
    assert.equal(q.length, 2);
  });
});
