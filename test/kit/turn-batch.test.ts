import assert from 'node:assert/strict';
import { TurnBatch } from '../../kit/index.js';

describe('kit/turn-batch', () => {
  it('runs the items of one turn together, in order, one batch at a time, each caller its own result', async () => {
    const batches: number[][] = [];
    let running = 0;
    const b = new TurnBatch<number, number>(async (xs) => {
      assert.equal(running++, 0, 'one batch at a time');
      batches.push([...xs]);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return xs.map((x) => x * 10);
    });
    const first = [1, 2, 3].map((x) => b.add(x));
    await new Promise((r) => setImmediate(r)); // the first batch is running
    const second = [4, 5].map((x) => b.add(x));
    assert.deepEqual(await Promise.all([...first, ...second]), [10, 20, 30, 40, 50]);
    assert.deepEqual(batches, [
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('a failing batch rejects its own items only', async () => {
    const b = new TurnBatch<number, number>(async (xs) => {
      if (xs.includes(2)) throw new Error('bad batch');
      return xs;
    });
    const bad = [b.add(1), b.add(2)];
    await assert.rejects(bad[0]!, /bad batch/);
    await assert.rejects(bad[1]!, /bad batch/);
    assert.equal(await b.add(3), 3);
  });

  it('idle() waits for every item handed over, those added while a batch runs included', async () => {
    const done: number[] = [];
    const b = new TurnBatch<number, void>(async (xs) => {
      await new Promise((r) => setTimeout(r, 10));
      done.push(...xs);
      if (xs.includes(1)) void b.add(9); // handed over during the run: idle() must wait for it too
      return xs.map(() => undefined);
    });
    void b.add(1);
    void b.add(2);
    await b.idle();
    assert.deepEqual(done, [1, 2, 9]);
    await b.idle(); // nothing pending: at once
  });
});
