import assert from 'node:assert/strict';
import { deadline, TIMED_OUT } from '../../kit/index.js';

describe('kit: deadline', () => {
  it('aborts with a TimeoutError once its time is up, as AbortSignal.timeout does', async () => {
    const d = deadline(10);
    assert.equal(d.signal.aborted, false);
    await new Promise((r) => d.signal.addEventListener('abort', r, { once: true }));
    assert.equal(d.signal.reason, TIMED_OUT);
    assert.equal((d.signal.reason as Error).name, 'TimeoutError');
  });

  it('done() before the time is up: the signal never aborts', async () => {
    const d = deadline(10);
    d.done();
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(d.signal.aborted, false);
  });
});
