import { strict as assert } from 'node:assert';
import { OverloadControl, type LoadSignals, type OverloadState } from '../../overload/index.js';

/**
 * A manual clock and hand-set signals: the controller's rules, without sleeping. The completion bound is off unless a
 * test sets `initialCps` (it then reports completions itself).
 */
function harness(settings: Record<string, number> = {}, outsideRefusals?: () => number) {
  settings = { initialCps: 0, ...settings };
  let now = 0;
  const signals: LoadSignals = { loopDelayMs: 5, storeWaitMs: 1 };
  /** The loop's busy share since the last tick, as the probe reads it. */
  const sinceTick = { busy: 0 };
  const changes: OverloadState[] = [];
  const ctl = new OverloadControl({
    signals: () => ({ ...signals }),
    clock: { now: () => now },
    settings,
    onChange: (s) => changes.push(s),
    outsideRefusals,
    busySinceTick: () => sinceTick.busy,
  });
  /** Offers `rate` calls a second for `ms`, ticking every 250 ms; returns how many were admitted. */
  const offer = (rate: number, ms: number): { admitted: number; refused: number } => {
    let admitted = 0;
    let refused = 0;
    const step = 1000 / rate;
    for (let t = 0; t < ms; t += step) {
      const before = now;
      now += step;
      if (Math.floor(now / 250) !== Math.floor(before / 250)) ctl.tick();
      if (ctl.admitNewCall().ok) admitted++;
      else refused++;
    }
    return { admitted, refused };
  };
  /** Four healthy seconds at `rate` with the loop `busy`: the cost of a call is learnt (full at rate / busy). */
  const learn = (rate: number, busy: number): void => {
    signals.loopBusy = busy;
    offer(rate, 4000);
    delete signals.loopBusy;
  };
  return { ctl, signals, sinceTick, changes, offer, learn, advance: (ms: number) => (now += ms) };
}

describe('OverloadControl', () => {
  it('admits every new call while the signals are healthy', () => {
    const h = harness();
    const r = h.offer(200, 3000);
    assert.equal(r.refused, 0);
    assert.equal(h.ctl.state().shedding, false);
    assert.deepEqual(h.changes, []);
  });

  it('a store backlog over its limit starts shedding at 70 % of the admitted rate, with Retry-After', () => {
    const h = harness({ retryAfterSeconds: 3 });
    h.offer(100, 1000);
    h.signals.storeWaitMs = 400;
    h.ctl.tick();
    const state = h.ctl.state();
    assert.equal(state.shedding, true);
    assert.equal(state.limitCps, 70);
    assert.match(state.reason, /store backlog 400 ms/);
    assert.equal(h.changes.length, 1);
    const verdicts = Array.from({ length: 5 }, () => h.ctl.admitNewCall());
    const refused = verdicts.find((v) => !v.ok);
    assert.ok(refused && !refused.ok);
    assert.equal(refused.retryAfterSeconds, 3);
  });

  it('media-engine commands waiting to be sent (rtpengine behind) start shedding as the store backlog does', () => {
    const h = harness({ maxLoopDelayMs: 40, maxStoreWaitMs: 100 });
    h.offer(100, 1000);
    h.signals.mediaWaitMs = 90; // under the limit
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, false);
    h.signals.mediaWaitMs = 250;
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, true);
    assert.equal(h.ctl.state().limitCps, 70);
    assert.match(h.ctl.state().reason, /media engine backlog 250 ms/);
  });

  it("a store wait that the loop's own delay explains is not the store's overload", () => {
    const h = harness({ maxLoopDelayMs: 40, maxStoreWaitMs: 100 });
    h.offer(100, 1000);
    h.signals.loopDelayMs = 30; // the loop a little behind: results wait for it, and queries for their connections
    h.signals.storeWaitMs = 140;
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, false);
    h.signals.loopDelayMs = 5; // the same wait with the loop on time: the store is behind
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, true);
    assert.match(h.ctl.state().reason, /store backlog 140 ms/);
  });

  it('overload with hardly any new calls coming in sets no limit: they are not its cause', () => {
    const h = harness({ minCps: 10 });
    h.offer(5, 1000);
    h.signals.storeWaitMs = 400;
    h.signals.loopDelayMs = 300;
    h.ctl.tick();
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, false);
    h.signals.storeWaitMs = 1;
    h.signals.loopDelayMs = 5;
    assert.equal(h.offer(150, 1000).refused, 0, 'calls arriving once it passed are not held back');
  });

  it('while limiting, admits about the limit each second and refuses the rest', () => {
    const h = harness();
    h.offer(100, 1000);
    h.signals.storeWaitMs = 400;
    h.ctl.tick();
    h.signals.storeWaitMs = 1; // healthy again, but the limit holds for a second before it rises
    const r = h.offer(200, 1000);
    assert.ok(r.admitted >= 65 && r.admitted <= 90, `admitted ${r.admitted}`);
    assert.equal(r.admitted + r.refused, 200);
  });

  it('an event-loop delay over its limit on two ticks running sheds too, and the reason says so', () => {
    const h = harness({ maxLoopDelayMs: 50 });
    h.offer(40, 1000);
    h.signals.loopDelayMs = 120;
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, false, 'one long turn is not overload');
    h.ctl.tick();
    assert.match(h.ctl.state().reason, /event-loop delay 120 ms/);
    assert.equal(h.ctl.state().limitCps, 28);
  });

  it('a single tick of loop delay over its limit, between healthy ones, refuses nothing', () => {
    const h = harness({ maxLoopDelayMs: 40 });
    let refused = 0;
    for (let i = 0; i < 10; i++) {
      refused += h.offer(150, 750).refused;
      h.signals.loopDelayMs = 90; // one tick in three: a GC or a slow commit
      h.ctl.tick();
      h.signals.loopDelayMs = 15;
    }
    assert.equal(refused, 0);
    assert.equal(h.ctl.state().shedding, false);
  });

  describe('the standing-backlog probe (every 10 ms, between ticks)', () => {
    /**
     * Probes for `ms`, the i-th one `late(i)` ms after it was due (the loop that long behind), the loop getting through
     * new calls at `rate` a second meanwhile.
     */
    const lateProbes = (h: ReturnType<typeof harness>, ms: number, late: (i: number) => number, rate = 0) => {
      let owed = 0;
      for (let i = 0, t = 0; t < ms; i++) {
        const step = 10 + late(i);
        h.advance(step);
        t += step;
        for (owed += (rate * step) / 1000; owed >= 1; owed--) h.ctl.admitNewCall();
        h.ctl.probe(); // due 10 ms after the one before fired: late(i) late
      }
    };

    it('every probe later than the delay limit for a whole tick sheds at once, without waiting for a tick', () => {
      const h = harness({ maxLoopDelayMs: 40 });
      h.offer(50, 1000); // then a flood: the loop falls behind, getting through 200 new calls a second
      h.ctl.probe();
      lateProbes(h, 200, () => 45, 200);
      assert.equal(h.ctl.state().shedding, false, 'not yet a whole tick');
      lateProbes(h, 100, () => 45, 200);
      assert.equal(h.ctl.state().shedding, true);
      assert.match(h.ctl.state().reason, /event loop behind by over 40 ms for \d+ ms/);
      assert.equal(h.changes.length, 1, 'told at once');
      // As a tick would: 70 % of the last second's admissions (700 ms at 50/s, then 300 ms at 200/s: about 95).
      const limit = h.ctl.state().limitCps!;
      assert.ok(limit >= 60 && limit <= 70, `limit ${limit}`);
    });

    it('one long turn, or late probes the loop catches up between, refuses nothing', () => {
      const h = harness({ maxLoopDelayMs: 40 });
      h.offer(200, 1000);
      h.ctl.probe();
      lateProbes(h, 400, (i) => (i === 0 ? 400 : 0)); // a 400 ms turn: one probe very late, then the loop is free
      lateProbes(h, 2000, (i) => (i % 5 === 4 ? 5 : 50)); // behind, but one probe in five is on time
      lateProbes(h, 2000, () => 30); // always behind, but by less than the limit
      assert.equal(h.ctl.state().shedding, false);
      assert.equal(h.offer(200, 1000).refused, 0);
    });
  });

  it('one tick of a loop delay even five times its limit is one long turn, not overload', () => {
    const h = harness({ maxLoopDelayMs: 40 });
    h.offer(100, 1000);
    h.signals.loopDelayMs = 200; // a 200-ms stall: at 200/s, one such shed 14 % of calls for 10 s
    h.ctl.tick();
    assert.equal(h.ctl.state().shedding, false);
    h.signals.loopDelayMs = 45; // the next tick, still behind: overload
    h.ctl.tick();
    assert.equal(h.ctl.state().limitCps, 70);
  });

  it('near the rate at which overload was seen the limit rises by 2 % a tick, not 10 %', () => {
    const h = harness();
    h.offer(100, 1000);
    h.signals.storeWaitMs = 400;
    h.ctl.tick(); // ceiling 100, limit 70
    h.signals.storeWaitMs = 1;
    const limits: number[] = [];
    h.offer(200, 1000); // the hold
    for (let i = 0; i < 6; i++) {
      h.offer(200, 250);
      limits.push(h.ctl.state().limitCps!);
    }
    assert.deepEqual(limits, [85, 94, 96, 98, 100, 102]); // 77 came at the end of the hold
  });

  it('the limit is cut once a hold, not on every tick the backlog it drains still shows, so it climbs back fast', () => {
    const h = harness({ minCps: 5 });
    h.offer(200, 1000);
    h.signals.storeWaitMs = 400;
    h.ctl.tick(); // ceiling 200, limit 140
    for (let i = 0; i < 3; i++) {
      h.offer(300, 250);
      h.ctl.tick(); // the backlog still shows within the hold: no further cut
    }
    assert.equal(h.ctl.state().limitCps, 140);
    h.offer(300, 500); // still overloaded after the hold: one more cut, and a new hold
    assert.equal(h.ctl.state().limitCps, 97); // 70 % of the 139/s admitted over the hold
    h.signals.storeWaitMs = 1;
    h.offer(150, 1000); // the hold
    const r = h.offer(150, 4000); // the flood is over: the limit climbs past 150 within a second or so
    assert.ok(r.refused < 0.15 * (r.admitted + r.refused), `${r.refused} refused of ${r.admitted + r.refused}`);
  });

  it('while limiting, a limit the new calls come in well under is not cut: the overload is the calls before', () => {
    const h = harness({ minCps: 10 });
    h.offer(400, 1000);
    h.signals.storeWaitMs = 400;
    h.ctl.tick(); // limit 280
    h.offer(400, 1000); // the hold, the limit holding the flood back
    h.offer(400, 250); // still overloaded with the limit holding calls back: cut
    assert.equal(h.ctl.state().limitCps, 196);
    h.offer(30, 3000); // the flood is over; its calls still load the store
    assert.equal(h.ctl.state().limitCps, 196, 'not cut to 70 % of the 30/s coming in now');
    h.signals.storeWaitMs = 1;
    assert.equal(h.offer(150, 2000).refused, 0, 'the rate that follows is carried at once');
  });

  describe("the event loop's busy share (its utilisation over the tick)", () => {
    it('while limiting, the limit holds while the loop is nearly full, and rises again once it has room', () => {
      const h = harness();
      h.offer(300, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 210
      h.signals.storeWaitMs = 1;
      h.signals.loopBusy = 0.96; // healthy signals, but the loop busy: raised now, it would saturate
      h.offer(300, 3000);
      assert.equal(h.ctl.state().limitCps, 210);
      h.signals.loopBusy = 0.7;
      h.offer(300, 750);
      assert.equal(h.ctl.state().limitCps, 210, 'a busy tick within the last second still holds it');
      h.offer(300, 500);
      assert.ok(h.ctl.state().limitCps! > 210, `limit ${h.ctl.state().limitCps}`);
    });

    it('one busy tick in a second holds the limit: it does not creep up on the quieter ticks between busy ones', () => {
      const h = harness();
      h.offer(600, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 420, ceiling 600
      h.signals.storeWaitMs = 1;
      h.offer(600, 1000); // the hold
      for (let i = 0; i < 16; i++) {
        h.signals.loopBusy = i % 3 === 0 ? 0.95 : 0.8; // 80-95 %: near full, not saturated
        h.offer(600, 250);
      }
      assert.equal(h.ctl.state().limitCps, 420);
    });

    it('below the ceiling, the limit rises by 10 % a tick only while the loop has a fifth of its time to spare', () => {
      const h = harness();
      h.offer(600, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 420, ceiling 600
      h.signals.storeWaitMs = 1;
      h.signals.loopBusy = 0.8;
      h.offer(600, 1000); // the hold
      const limits: number[] = [];
      for (let i = 0; i < 3; i++) {
        h.offer(600, 250);
        limits.push(h.ctl.state().limitCps!);
      }
      assert.deepEqual(limits, [429, 438, 447]); // 2 % a tick, though far under 90 % of the 600/s ceiling
    });

    it('saturated at the limit sets the ceiling to that rate: the flood that came in before is no measure', () => {
      let outside = 0;
      const h = harness({}, () => outside);
      h.learn(600, 0.4); // full at 1,500/s: the first cut is not capped by it
      h.offer(900, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 630, ceiling 900
      h.signals.storeWaitMs = 1;
      h.signals.loopBusy = 0.98;
      for (let t = 0; t < 1500; t += 250) {
        outside += 20;
        h.offer(900, 250);
      }
      const cut = h.ctl.state().limitCps!; // 90 % of the ~630/s admitted, and the ceiling ~630
      assert.ok(cut >= 560 && cut <= 570, `limit ${cut}`);
      h.signals.loopBusy = 0.5;
      h.offer(900, 1000); // the hold, and a second of room
      const limits: number[] = [];
      for (let i = 0; i < 4; i++) {
        h.offer(900, 250);
        limits.push(h.ctl.state().limitCps!);
      }
      // Past 90 % of the ~630 ceiling, 2 % a tick; had the ceiling stayed at the flood's 900/s, 10 % steps to 810.
      for (let i = 1; i < limits.length; i++)
        assert.ok(limits[i]! <= Math.ceil(1.02 * limits[i - 1]!), `limits ${limits.join(', ')}`);
    });

    it('saturated on two ticks running, with the UDP front refusing for its backlog, is overload: 70 % at first', () => {
      let outside = 0;
      const h = harness({}, () => outside);
      h.offer(300, 1000);
      h.signals.loopBusy = 0.99;
      outside += 20;
      h.ctl.tick();
      assert.equal(h.ctl.state().shedding, false, 'one busy tick is not overload');
      outside += 20;
      h.ctl.tick();
      assert.equal(h.ctl.state().limitCps, 210);
      assert.match(h.ctl.state().reason, /event loop busy 99 %/);
    });

    it('saturated while limiting steps the limit back by a tenth, not by the full cut', () => {
      let outside = 0;
      const h = harness({}, () => outside);
      h.learn(600, 0.4);
      h.offer(300, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 210
      h.signals.storeWaitMs = 1;
      h.signals.loopBusy = 0.98;
      for (let t = 0; t < 1500; t += 250) {
        outside += 20;
        h.offer(300, 250);
      }
      assert.equal(h.ctl.state().limitCps, 188); // 90 % of the 209/s admitted at the 210 limit
    });

    it('saturated at the limit with nothing learnt of what a call costs (a process started cold) takes the full cut', () => {
      let outside = 0;
      const h = harness({}, () => outside);
      h.offer(900, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 630
      h.signals.storeWaitMs = 1;
      h.signals.loopBusy = 0.98;
      for (let t = 0; t < 1500; t += 250) {
        outside += 20;
        h.offer(900, 250);
      }
      const limit = h.ctl.state().limitCps!; // 70 % of the ~630/s admitted: a cold process is far from it
      assert.ok(limit >= 435 && limit <= 445, `limit ${limit}`);
    });

    it("a flood's first cut is no higher than the rate the loop carries at 85 % busy, from what a call cost before", () => {
      const h = harness();
      h.offer(150, 1000); // the loop's share not measured yet: nothing learnt
      h.signals.loopBusy = 0.6;
      h.offer(150, 4000); // 4 ms of loop a call
      h.signals.loopBusy = 0.95;
      h.offer(400, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick();
      const limit = h.ctl.state().limitCps!; // 0.85 / 0.004 = 212, not 280 (70 % of the 400 admitted)
      assert.ok(limit >= 205 && limit <= 215, `limit ${limit}`);
    });

    it('saturated with new calls coming in faster than the loop carries at what a call cost before is overload', () => {
      const h = harness();
      h.signals.loopBusy = 0.6;
      h.offer(150, 4000); // 4 ms of loop a call: full at 250/s
      h.signals.loopBusy = 0.99; // no delay over its limit, no store or media backlog, nothing refused by the front
      h.offer(400, 250);
      assert.equal(h.ctl.state().shedding, false, 'one saturated tick is not overload');
      h.offer(400, 500);
      assert.equal(h.ctl.state().shedding, true);
      assert.match(h.ctl.state().reason, /event loop busy 99 %/);
      assert.ok(h.ctl.state().limitCps! <= 215, `limit ${h.ctl.state().limitCps}`);
    });

    it('the cost is learnt while limiting too, from ticks that refused nothing', () => {
      const h = harness();
      h.offer(300, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 210: a switch started cold under load, say
      h.signals.storeWaitMs = 1;
      assert.ok(h.offer(300, 1000).refused > 0);
      h.signals.loopBusy = 0.6;
      h.offer(100, 3500); // under the limit, refusing nothing: 6 ms of loop a call, full at 167/s
      assert.equal(h.ctl.state().shedding, false, 'lifted 3 s after the last refusal');
      h.signals.loopBusy = 0.99;
      h.offer(400, 750);
      assert.equal(h.ctl.state().shedding, true);
      assert.ok(h.ctl.state().limitCps! <= 142, `limit ${h.ctl.state().limitCps}`);
    });

    it("the probe limits a flood's start within the tick: saturated since the last one, calls faster than it carries", () => {
      const h = harness();
      h.signals.loopBusy = 0.6;
      h.offer(150, 4000); // 4 ms of loop a call: full at 250/s
      h.sinceTick.busy = 0.99;
      // 900/s from here; the probe runs every 10 ms between the calls.
      let limitedAfter: number | undefined;
      for (let t = 0; t < 250 && limitedAfter === undefined; t += 10) {
        h.offer(900, 10);
        h.ctl.probe();
        if (h.ctl.state().shedding) limitedAfter = t + 10;
      }
      assert.ok(limitedAfter !== undefined && limitedAfter <= 250, `limited after ${limitedAfter} ms`);
      assert.match(h.ctl.state().reason, /new calls at \d+\/s on a saturated loop/);
      assert.ok(h.ctl.state().limitCps! <= 215, `limit ${h.ctl.state().limitCps}`); // the learnt cost at 85 % busy
    });

    it('while limiting, the probe steps the limit back by a tenth once the loop saturates at it, after the hold', () => {
      const h = harness();
      h.learn(600, 0.4);
      h.offer(300, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 210, held a second
      h.signals.storeWaitMs = 1;
      h.sinceTick.busy = 0.99;
      for (let t = 0; t < 500; t += 10) {
        h.offer(300, 10);
        h.ctl.probe();
      }
      assert.equal(h.ctl.state().limitCps, 210, 'not within the hold');
      for (let t = 0; t < 750 && h.ctl.state().limitCps === 210; t += 10) {
        h.offer(300, 10);
        h.ctl.probe();
      }
      const limit = h.ctl.state().limitCps!; // 90 % of the ~210/s admitted at the limit
      assert.ok(limit >= 185 && limit <= 192, `limit ${limit}`);
      assert.match(h.ctl.state().reason, /event loop saturated at the limit/);
    });

    it('the probe leaves alone a saturated loop with calls under the learnt rate, or with nothing learnt yet', () => {
      const h = harness();
      h.sinceTick.busy = 0.99;
      for (let t = 0; t < 1000; t += 10) {
        h.offer(400, 10); // a cold process: nothing learnt of what a call costs
        h.ctl.probe();
      }
      assert.equal(h.ctl.state().shedding, false);
      const w = harness();
      w.signals.loopBusy = 0.6;
      w.offer(150, 4000); // full at 250/s
      w.sinceTick.busy = 0.99; // a GC, a burst of hang-ups
      for (let t = 0; t < 1000; t += 10) {
        w.offer(230, 10);
        w.ctl.probe();
      }
      assert.equal(w.ctl.state().shedding, false);
    });

    it('saturated with new calls coming in under what the loop carries at that cost is not overload', () => {
      const h = harness();
      h.signals.loopBusy = 0.6;
      h.offer(150, 4000); // full at 250/s
      h.signals.loopBusy = 0.99; // a GC, a burst of hang-ups: the loop is full, but not with new calls
      const r = h.offer(230, 2000);
      assert.equal(r.refused, 0);
      assert.equal(h.ctl.state().shedding, false);
    });

    it('without a cost learnt (a process just started, or nothing measured), the first cut is 70 % of the admitted rate', () => {
      const h = harness();
      h.signals.loopBusy = 0.99;
      h.offer(400, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick();
      assert.equal(h.ctl.state().limitCps, 280);
    });

    it('saturated with no new call waiting for the loop (a cold process at full rate) refuses nothing', () => {
      const h = harness({ maxLoopDelayMs: 40 });
      h.signals.loopBusy = 0.99;
      h.signals.loopDelayMs = 25;
      assert.equal(h.offer(200, 3000).refused, 0);
      assert.equal(h.ctl.state().shedding, false);
    });
  });

  it('overload within the first second of calls is measured against the rate they came in at, not a full second', () => {
    const h = harness();
    h.offer(200, 500); // a switch just started: its first 100 calls
    h.signals.storeWaitMs = 400;
    h.ctl.tick();
    assert.equal(h.ctl.state().limitCps, 140); // 70 % of 200/s, not of the 100 calls of the last second
    h.signals.storeWaitMs = 1;
    h.offer(200, 1500); // held for a second, then 10 % a tick: the ceiling is 200/s, not 100
    assert.ok(h.ctl.state().limitCps! >= 160, `limit ${h.ctl.state().limitCps}`);
  });

  it('never limits below minCps, so some calls always get through', () => {
    const h = harness({ minCps: 3 });
    h.offer(10, 1000);
    h.signals.storeWaitMs = 1000; // and it stays: a cut every hold, 7, 4, then the floor
    h.offer(50, 8000);
    assert.equal(h.ctl.state().limitCps, 3);
    const r = h.offer(50, 2000);
    assert.ok(r.admitted >= 5, `admitted ${r.admitted}`);
  });

  it('raises the limit while healthy and lifts it once nothing was refused for releaseAfterMs', () => {
    const h = harness({ releaseAfterMs: 2000 });
    h.offer(100, 1000);
    h.signals.storeWaitMs = 400;
    h.ctl.tick();
    h.signals.storeWaitMs = 1;
    h.offer(100, 3000); // limit rises 10 % a tick after the 1 s hold: reaches 100/s, refusals stop
    assert.ok((h.ctl.state().limitCps ?? Infinity) >= 100 || h.ctl.state().limitCps === null);
    h.offer(50, 3000);
    assert.equal(h.ctl.state().shedding, false);
    assert.equal(h.changes.at(-1)?.shedding, false, 'the end of shedding is reported');
  });

  it('the fixed platform cap refuses the calls beyond it within any second', () => {
    const h = harness({ platformMaxCps: 10 });
    const r = h.offer(25, 2000);
    assert.ok(r.admitted >= 19 && r.admitted <= 21, `admitted ${r.admitted}`);
    assert.equal(r.refused, 50 - r.admitted);
  });

  describe('the completion bound: new calls no faster than their set-ups complete', () => {
    /**
     * A loop that carries `capacity` set-ups a second, first come first served, each answered `answerMs` after its
     * work is done; new calls offered at `rate` for `ms` in 1-ms steps, ticking every 250 ms and probing every 10 ms.
     * The loop's busy share is the work it did over the span. Returns, per second, the calls admitted and the p99 of
     * admitted calls' set-up times (admission to completion) of the calls completed in that second.
     */
    const model = (
      h: ReturnType<typeof harness>,
      o: { rate: number; ms: number; capacity: number; answerMs?: number },
    ) => {
      const waiting: number[] = []; // admission times, oldest first
      const answering: [number, number][] = []; // [done at, admitted at]
      let work = 0; // set-ups' worth of loop time available now
      let owed = 0;
      let doneSinceTick = 0;
      let msSinceTick = 0;
      const seconds: { admitted: number; setupMs: number[] }[] = [];
      const second = (t: number) => (seconds[Math.floor(t / 1000)] ??= { admitted: 0, setupMs: [] });
      for (let t = 0; t < o.ms; t++) {
        h.advance(1);
        msSinceTick++;
        for (owed += o.rate / 1000; owed >= 1; owed--)
          if (h.ctl.admitNewCall().ok) {
            waiting.push(t);
            second(t).admitted++;
          }
        work = Math.min(work + o.capacity / 1000, waiting.length > 0 ? Infinity : 1);
        while (work >= 1 && waiting.length > 0) {
          work--;
          doneSinceTick++;
          answering.push([t + (o.answerMs ?? 10), waiting.shift()!]);
        }
        while (answering.length > 0 && answering[0]![0] <= t) {
          const [, admittedAt] = answering.shift()!;
          h.ctl.noteCompleted();
          second(t).setupMs.push(t - admittedAt);
        }
        const busy = waiting.length > 0 ? 1 : Math.min(1, (1000 * doneSinceTick) / (o.capacity * msSinceTick));
        h.sinceTick.busy = busy;
        if (t % 10 === 9) {
          h.ctl.probe();
        }
        if (t % 250 === 249) {
          h.signals.loopBusy = busy;
          h.ctl.tick();
          doneSinceTick = 0;
          msSinceTick = 0;
        }
      }
      const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * (xs.length - 1))] ?? 0;
      return seconds.map((s) => ({ admitted: s.admitted, p99: p99(s.setupMs) }));
    };

    it('a flood of four times what a cold switch carries: set-ups under 200 ms from the first second', () => {
      const h = harness({ initialCps: 50 });
      const r = model(h, { rate: 800, ms: 5000, capacity: 200 });
      for (const [i, s] of r.entries()) assert.ok(s.p99 < 200, `second ${i}: set-up p99 ${s.p99} ms`);
      // It carries what it completes: most of the capacity once past the first second, not a trickle.
      for (const s of r.slice(1)) assert.ok(s.admitted >= 120 && s.admitted <= 220, `admitted ${s.admitted}/s`);
    });

    it('before any set-up completes, new calls are admitted at the initial rate', () => {
      const h = harness({ initialCps: 50 });
      assert.equal(h.ctl.gate().limitCps, 50);
      const r = h.offer(800, 100); // nothing completes
      assert.ok(r.admitted <= 7, `admitted ${r.admitted}`);
      const v = h.ctl.admitNewCall();
      assert.ok(!v.ok && /faster than their set-ups complete, 50\/s/.test(v.reason), JSON.stringify(v));
    });

    it('with room, the bound doubles a tick: a switch that carries the rate offered refuses little of it', () => {
      const h = harness({ initialCps: 50 });
      const r = model(h, { rate: 300, ms: 4000, capacity: 1000 }); // 30 % busy at 300/s
      assert.ok(r[0]!.admitted >= 100, `first second ${r[0]!.admitted}`);
      for (const s of r.slice(1)) assert.ok(s.admitted >= 297, `admitted ${s.admitted}/s`);
    });

    it('a warm switch flooded is held to what it completes within the tick, not after it', () => {
      const h = harness({ initialCps: 50 });
      model(h, { rate: 300, ms: 3000, capacity: 400 }); // warm at 300/s, 75 % busy
      const r = model(h, { rate: 1200, ms: 3000, capacity: 400 });
      for (const [i, s] of r.entries()) assert.ok(s.p99 < 200, `second ${i}: set-up p99 ${s.p99} ms`);
    });

    it('idle for a second, a switch starts again from the initial rate', () => {
      const h = harness({ initialCps: 50 });
      model(h, { rate: 300, ms: 3000, capacity: 1000 });
      assert.ok(h.ctl.gate().limitCps! >= 600, `bound ${h.ctl.gate().limitCps}`);
      model(h, { rate: 0, ms: 1500, capacity: 1000 });
      assert.equal(h.ctl.gate().limitCps, 50);
    });

    it('an outside gate is told when the bound moves by a twentieth or more', () => {
      let told = 0;
      const h = harness({ initialCps: 50 });
      const ctl = new OverloadControl({
        signals: () => ({ loopDelayMs: 5, storeWaitMs: 1, loopBusy: 0.3 }),
        clock: { now: () => h.advance(0) },
        settings: { initialCps: 50 },
        onGate: () => told++,
      });
      for (let i = 0; i < 100; i++) {
        h.advance(5);
        if (ctl.admitNewCall().ok) ctl.noteCompleted();
        if (i % 50 === 49) ctl.tick();
      }
      assert.ok(told >= 1, 'told of the rise');
      assert.ok(ctl.gate().limitCps! > 50, `bound ${ctl.gate().limitCps}`);
    });
  });

  describe('with a gate outside the main thread (the SIP UDP front)', () => {
    it('publishes the limit and the fixed settings the outside gate applies', () => {
      const h = harness({ platformMaxCps: 0, retryAfterSeconds: 4, minCps: 7, maxLoopDelayMs: 30 });
      assert.deepEqual(h.ctl.gate(), {
        limitCps: null,
        platformMaxCps: 0,
        retryAfterSeconds: 4,
        minCps: 7,
        maxBacklogMs: 60, // twice the loop-delay limit
      });
      h.offer(100, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick();
      assert.equal(h.ctl.gate().limitCps, 70);
    });

    it('a call admitted outside is counted and takes a token from the gate of the main thread', () => {
      const h = harness();
      h.offer(100, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick(); // limit 70/s, at most one token left
      h.signals.storeWaitMs = 1;
      const admitted = h.ctl.state().admitted;
      for (let i = 0; i < 30; i++) h.ctl.noteAdmitted();
      assert.equal(h.ctl.state().admitted, admitted + 30);
      h.advance(250); // 17.5 tokens' worth of time, all owed to the calls admitted outside
      assert.equal(h.ctl.admitNewCall().ok, false);
    });

    it("refusals made outside keep the limit from being lifted, and count in the state's refusals", () => {
      let outside = 0;
      const h = harness({ releaseAfterMs: 2000 }, () => outside);
      h.offer(100, 1000);
      h.signals.storeWaitMs = 400;
      h.ctl.tick();
      h.signals.storeWaitMs = 1;
      // The main thread sees only what the outside gate admitted; the outside gate keeps refusing.
      for (let t = 0; t < 4000; t += 250) {
        h.advance(250);
        outside += 10;
        h.ctl.tick();
      }
      assert.equal(h.ctl.state().shedding, true, 'still limiting while the outside gate refuses');
      assert.ok(h.ctl.state().refused >= 160, `refused ${h.ctl.state().refused}`);
      h.advance(2500);
      h.ctl.tick();
      h.advance(250);
      h.ctl.tick();
      assert.equal(h.ctl.state().shedding, false, 'lifted once the outside gate stopped refusing');
    });
  });
});
