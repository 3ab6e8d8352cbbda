import assert from 'node:assert/strict';
import { ManualClock, PeriodicJob } from '../../kit/index.js';

describe('kit: PeriodicJob', () => {
  it('runs at start and every interval, never twice at once; close stops it and waits for the run', async () => {
    const clock = new ManualClock();
    let runs = 0;
    let release!: () => void;
    const job = new PeriodicJob(async () => {
      runs++;
      await new Promise<void>((r) => (release = r));
      return runs;
    });
    job.start({ everyMs: 1000, clock, onError: () => undefined, name: 'sweep' });
    assert.equal(runs, 1);
    clock.advance(1000);
    assert.equal(runs, 1, 'the first run is still under way: the tick joins it');
    const joined = job.runOnce();
    release();
    assert.equal(await joined, 1);
    clock.advance(1000);
    assert.equal(runs, 2);
    const closed = job.close();
    release();
    await closed;
    assert.deepEqual(clock.periodicJobs(), []);
    await job.close();
  });

  it('a failed run is reported and the next one goes ahead', async () => {
    const clock = new ManualClock();
    const errors: unknown[] = [];
    let n = 0;
    const job = new PeriodicJob(async () => {
      if (++n === 1) throw new Error('first');
      return n;
    });
    job.start({ everyMs: 10, clock, onError: (e) => errors.push(e) });
    await new Promise((r) => setImmediate(r));
    clock.advance(10);
    assert.equal(await job.runOnce(), 2);
    assert.equal((errors[0] as Error).message, 'first');
    await job.close();
  });
});
