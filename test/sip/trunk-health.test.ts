import assert from 'node:assert/strict';
import { ManualClock } from '../../kit/index.js';
import { TrunkHealth, type TrunkStateChange } from '../../sip/trunk-health.js';
import type { TrunkRow } from '../../store/index.js';

const trunk = { id: 't1', name: 'carrier', is_active: true, options_ping: true } as TrunkRow;

describe('sip: trunk health (OPTIONS thresholds, Retry-After holds)', () => {
  it('marks a trunk down after downAfter failed pings and up after upAfter answers', async () => {
    const answers: boolean[] = [true, false, false, true, true];
    const health = new TrunkHealth(async () => answers.shift()!, { intervalSeconds: 1, downAfter: 2, upAfter: 2 });
    const changes: string[] = [];
    health.on('change', (c: TrunkStateChange) => changes.push(`${c.health}/${c.previous}`));
    await health.round([trunk]);
    assert.equal(health.isUp('t1'), true);
    await health.round([trunk]);
    assert.equal(health.isUp('t1'), true, 'one failure is not enough');
    await health.round([trunk]);
    assert.equal(health.isUp('t1'), false);
    await health.round([trunk]);
    assert.equal(health.isUp('t1'), false, 'one answer is not enough');
    await health.round([trunk]);
    assert.equal(health.isUp('t1'), true);
    assert.deepEqual(changes, ['up/unknown', 'down/up', 'up/down']);
  });

  it('holds a trunk down for a Retry-After and announces its return', () => {
    const clock = new ManualClock(1000);
    const health = new TrunkHealth(async () => true, { intervalSeconds: 0, downAfter: 1, upAfter: 1 }, clock);
    const changes: TrunkStateChange[] = [];
    health.on('change', (c) => changes.push(c));
    health.holdDown(trunk, 30);
    assert.equal(health.isUp('t1'), false);
    clock.advance(29_000);
    assert.equal(health.isUp('t1'), false);
    clock.advance(1_000);
    assert.equal(health.isUp('t1'), true);
    assert.deepEqual(
      changes.map((c) => [c.health, c.cause, c.retryAfterSeconds]),
      [
        ['down', 'retry-after', 30],
        ['up', 'retry-after', undefined],
      ],
    );
  });

  it('never pings a trunk without options_ping, and counts a ping that throws as a failure', async () => {
    const pinged: string[] = [];
    const health = new TrunkHealth(
      async (t) => {
        pinged.push(t.id);
        throw new Error('transport');
      },
      { intervalSeconds: 1, downAfter: 1, upAfter: 1 },
    );
    await health.round([trunk, { ...trunk, id: 't2', options_ping: false }]);
    assert.deepEqual(pinged, ['t1']);
    assert.equal(health.isUp('t1'), false);
    assert.equal(health.isUp('t2'), true);
  });
});
