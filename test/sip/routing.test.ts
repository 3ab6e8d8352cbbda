import assert from 'node:assert/strict';
import { TrunkRouteTable, type PlanOptions } from '../../sip/routing.js';
import type { RouteRow, TrunkRow } from '../../store/index.js';

const trunk = (id: string, over: Partial<TrunkRow> = {}): TrunkRow =>
  ({ id, name: id, host: '127.0.0.1', port: 5060, transport: 'udp', is_active: true, ...over }) as TrunkRow;
let n = 0;
const route = (prefix: string, trunkId: string, priority = 0, buy = 10, weight = 1): RouteRow => ({
  id: `r${++n}`,
  prefix,
  trunk_id: trunkId,
  trunk_name: trunkId,
  priority,
  weight,
  buy_rate_cents: buy,
  created_at: '',
});

function options(trunks: TrunkRow[], over: Partial<PlanOptions> = {}): PlanOptions {
  return { allowLossMaking: false, trunks: new Map(trunks.map((t) => [t.id, t])), isUp: () => true, ...over };
}

describe('sip: routing table (least cost routing)', () => {
  const trunks = ['a', 'b', 'c', 'd'].map((id) => trunk(id));

  it('orders by longest prefix, then priority, then cheapest buy rate among equal weights', () => {
    const table = new TrunkRouteTable([
      route('', 'd', 0, 1),
      route('254', 'a', 0, 30),
      route('2547', 'b', 1, 20),
      route('2547', 'c', 1, 10),
    ]);
    const plan = table.plan('254712345678', options(trunks));
    assert.deepEqual(
      plan.tried.map((p) => p.trunk.id),
      ['c', 'b', 'a', 'd'],
    );
    assert.match(plan.tried[0].why, /prefix '2547', priority 1, equal weights: cheapest first/);
  });

  it('skips a route dearer than the sell rate unless loss-making routes are allowed', () => {
    const table = new TrunkRouteTable([route('254', 'a', 0, 300), route('254', 'b', 1, 150)]);
    const plan = table.plan('254700', options(trunks, { sellRateCents: 200 }));
    assert.deepEqual(
      plan.tried.map((p) => p.trunk.id),
      ['b'],
    );
    assert.equal(plan.skipped[0].reason, 'loss-making');
    const allowed = table.plan('254700', options(trunks, { sellRateCents: 200, allowLossMaking: true }));
    assert.deepEqual(
      allowed.tried.map((p) => p.trunk.id),
      ['a', 'b'],
    );
  });

  it('skips down and inactive trunks, and a trunk already planned under a longer prefix', () => {
    const table = new TrunkRouteTable([route('254', 'a'), route('254', 'b', 1), route('25', 'c'), route('2', 'a')]);
    const plan = table.plan(
      '25470',
      options([trunk('a'), trunk('b'), trunk('c', { is_active: false })], { isUp: (id) => id !== 'b' }),
    );
    assert.deepEqual(
      plan.tried.map((p) => p.trunk.id),
      ['a'],
    );
    assert.deepEqual(
      plan.skipped.map((s) => [s.trunk?.id, s.reason]),
      [
        ['b', 'trunk-down'],
        ['c', 'trunk-inactive'],
        ['a', 'trunk-repeated'],
      ],
    );
  });

  it('draws among equal priority in proportion to weight', () => {
    const table = new TrunkRouteTable([route('1', 'a', 0, 10, 3), route('1', 'b', 0, 5, 1)]);
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    let aFirst = 0;
    for (let i = 0; i < 4000; i++)
      if (table.plan('1555', options(trunks, { random })).tried[0].trunk.id === 'a') aFirst++;
    assert.ok(aFirst > 2800 && aFirst < 3200, `weight 3 of 4 first ${aFirst} times in 4000`);
  });

  it('finds the emergency route by its word, never by digits', () => {
    const table = new TrunkRouteTable([route('emergency', 'b'), route('', 'a')]);
    assert.deepEqual(
      table.plan('emergency', options(trunks)).tried.map((p) => p.route?.prefix),
      ['emergency', ''],
    );
    assert.deepEqual(
      table.plan('112', options(trunks)).tried.map((p) => p.trunk.id),
      ['a'],
    );
  });
});
