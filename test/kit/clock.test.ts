import assert from 'node:assert/strict';
import { ManualClock, sleep, systemClock } from '../../kit/index.js';

/** Lets pending promise callbacks run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe('kit sleep', () => {
  it('resolves when the clock passes its time, not before', async () => {
    const clock = new ManualClock(0);
    let done = false;
    const p = sleep(clock, 500).then(() => (done = true));
    clock.advance(499);
    await settle();
    assert.equal(done, false);
    clock.advance(1);
    await p;
    assert.equal(done, true);
    assert.equal(clock.pendingTimers, 0);
  });

  it('resolves at once when its signal aborts, and clears its timer', async () => {
    const clock = new ManualClock(0);
    const ac = new AbortController();
    const p = sleep(clock, 60_000, ac.signal);
    assert.equal(clock.pendingTimers, 1);
    ac.abort();
    await p;
    assert.equal(clock.pendingTimers, 0, 'the timer went with the abort');
    assert.equal(clock.now(), 0);
  });

  it('an already aborted signal sets no timer at all', async () => {
    const clock = new ManualClock(0);
    const ac = new AbortController();
    ac.abort();
    await sleep(clock, 60_000, ac.signal);
    assert.equal(clock.pendingTimers, 0);
  });

  it('waits on the system clock', async () => {
    const t0 = Date.now();
    await sleep(systemClock, 30);
    assert.ok(Date.now() - t0 >= 25);
  });
});

describe('kit ManualClock periodicJobs', () => {
  it('names the periodic jobs still set, not one-shot timers', () => {
    const clock = new ManualClock(0);
    clock.setTimeout(() => undefined, 10);
    const a = clock.every(100, () => undefined, 'credit-tick');
    clock.every(100, () => undefined);
    assert.deepEqual(clock.periodicJobs(), ['credit-tick', '']);
    a.cancel();
    assert.deepEqual(clock.periodicJobs(), ['']);
  });
});
