import assert from 'node:assert/strict';
import { ManualClock } from '../../../kit/index.js';
import { TickScheduler } from '../../../media/mixer/tick-scheduler.js';

describe('TickScheduler (the mixers’ 20 ms clock)', () => {
  it('keeps to a fixed grid: timers that fire 3 ms late do not make it drift', () => {
    const clock = new ManualClock(1000);
    // Every timer fires 3 ms after the instant it was asked for: a busy event loop.
    const lateTimers = {
      setTimeout: (fn: () => void, ms: number) => clock.setTimeout(fn, ms + 3),
      clearTimeout: (h: Parameters<ManualClock['clearTimeout']>[0]) => clock.clearTimeout(h),
    };
    const scheduler = new TickScheduler({ timers: lateTimers, clock: { now: () => clock.now() } });
    let ticks = 0;
    scheduler.add({ size: 1, tick: () => void (ticks += 1) });
    clock.advance(2000);
    // 100 periods in 2 s: one tick per period, none lost to the lateness (a period-after-last timer loses ~13 %).
    assert.ok(ticks >= 99 && ticks <= 101, `ticks ${ticks}`);
    const s = scheduler.stats();
    assert.equal(s.latePackets, 0);
    assert.ok(s.lagP99Ms >= 3 && s.lagP99Ms < 3.5, `p99 lag ${s.lagP99Ms}`);
    scheduler.stop();
  });

  it('counts packets sent more than 20 ms late, and skips rather than bursts after a long stall', () => {
    const clock = new ManualClock(0);
    let extra = 0;
    const scheduler = new TickScheduler({ timers: clock, clock: { now: () => clock.now() + extra } });
    let ticks = 0;
    scheduler.add({ size: 10, tick: () => void (ticks += 1) });
    clock.advance(200);
    extra = 300; // the process stalls for 300 ms (15 periods)
    clock.advance(20);
    const s = scheduler.stats();
    assert.ok(s.skippedTicks >= 9, `skipped ${s.skippedTicks}`);
    assert.ok(s.latePackets >= s.skippedTicks * 10 + 10, `late ${s.latePackets}`);
    assert.ok(ticks < 11 + 15, 'the stale ticks are not all sent in a burst');
    scheduler.stop();
  });

  it('stops its timer when the last member leaves', () => {
    const clock = new ManualClock(0);
    const scheduler = new TickScheduler({ timers: clock, clock: { now: () => clock.now() } });
    const m = { size: 1, tick: () => undefined };
    scheduler.add(m);
    assert.equal(scheduler.running, true);
    scheduler.remove(m);
    assert.equal(scheduler.running, false);
    assert.equal(clock.pendingTimers, 0);
  });
});
