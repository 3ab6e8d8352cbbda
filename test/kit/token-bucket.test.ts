import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { TOKEN_BUCKET_MODULE, TokenBucket } from '../../kit/index.js';

describe('kit: the one token bucket', () => {
  it('starts full, refills at its rate up to its size, and refuses when empty', () => {
    const b = new TokenBucket({ ratePerSecond: 2, burst: 3, at: 0 });
    assert.deepEqual([b.take(0), b.take(0), b.take(0), b.take(0)], [true, true, true, false]);
    assert.equal(b.msUntilToken(), 500);
    assert.equal(b.take(499), false);
    assert.equal(b.take(500), true);
    assert.equal(b.peek(60_000), 3, 'never beyond its size');
  });

  it('a use admitted elsewhere is owed, down to the debt allowed; keepAtMost caps what was saved', () => {
    const b = new TokenBucket({ ratePerSecond: 10, burst: 2, tokens: 0, at: 0 });
    for (let i = 0; i < 5; i++) b.takeOwing(0, 2);
    assert.equal(b.tokens, -2);
    assert.equal(b.take(200), false, 'the debt is paid back first');
    b.configure(100, 50);
    b.refill(1000);
    b.keepAtMost(1);
    assert.equal(b.tokens, 1);
  });

  it('a worker thread without the TypeScript loader imports the same module by its URL', async () => {
    const source = `
      import { workerData, parentPort } from 'node:worker_threads';
      const { TokenBucket } = await import(workerData);
      const b = new TokenBucket({ ratePerSecond: 1, burst: 1, at: 0 });
      parentPort.postMessage([b.take(0), b.take(0)]);`;
    const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
      workerData: TOKEN_BUCKET_MODULE,
      execArgv: [],
    });
    const reply = await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
    assert.deepEqual(reply, [true, false]);
    await worker.terminate();
  });
});
