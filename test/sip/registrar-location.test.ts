/** The location service's state machine on a manual clock: binding expiry, refresh, sweep, call slots. */
import assert from 'node:assert/strict';
import { LocationService, CallSlotsExhaustedError, type Binding } from '../../sip/location.js';
import { ManualClock } from '../../sip/stack/index.js';

const ACC = '11111111-1111-4111-8111-111111111111';

function binding(clock: ManualClock, contact: string, seconds: number, extra: Partial<Binding> = {}): Binding {
  return {
    accountId: ACC,
    endUserId: 'user-1',
    extension: '1001',
    contact,
    transport: 'UDP',
    sourceAddress: '192.0.2.10',
    sourcePort: 5060,
    flowId: 'udp:1',
    expiresAt: clock.now() + seconds * 1000,
    registeredAt: clock.now(),
    tokenId: 'tok-1',
    callId: 'c1',
    cseq: 1,
    ...extra,
  };
}

describe('sip/location: bindings and call slots', () => {
  let clock: ManualClock;
  let loc: LocationService;
  beforeEach(() => {
    clock = new ManualClock();
    clock.advance(1_700_000_000_000);
    loc = new LocationService({ clock });
  });

  it('a binding is found until its expiry, then lookup hides it and the sweep reports the end-user emptied', () => {
    const c = loc.apply(ACC, '1001', [binding(clock, 'sip:a@192.0.2.10', 60)], []);
    assert.equal(c.added.length, 1);
    assert.equal(loc.isRegistered(ACC, '1001'), true);
    clock.advance(59_999);
    assert.equal(loc.lookup(ACC, '1001').length, 1);
    assert.deepEqual(loc.sweep(), []);
    clock.advance(1);
    assert.equal(loc.isRegistered(ACC, '1001'), false);
    assert.equal(loc.size, 1, 'kept until swept');
    assert.deepEqual(loc.sweep(), [{ accountId: ACC, extension: '1001', endUserId: 'user-1' }]);
    assert.equal(loc.size, 0);
    assert.deepEqual(loc.sweep(), [], 'reported once');
  });

  it('a refresh of a live contact is not an addition and keeps the first registration time', () => {
    loc.apply(ACC, '1001', [binding(clock, 'sip:a@192.0.2.10', 60)], []);
    const first = clock.now();
    clock.advance(30_000);
    const c = loc.apply(ACC, '1001', [binding(clock, 'sip:a@192.0.2.10', 60, { cseq: 2 })], []);
    assert.equal(c.added.length, 0);
    assert.equal(c.refreshed.length, 1);
    const [b] = loc.lookup(ACC, '1001');
    assert.equal(b.registeredAt, first);
    assert.equal(b.expiresAt, clock.now() + 60_000);
    assert.equal(b.cseq, 2);
  });

  it('a contact whose binding expired but was not yet swept counts as added again', () => {
    loc.apply(ACC, '1001', [binding(clock, 'sip:a@192.0.2.10', 60)], []);
    clock.advance(61_000);
    const c = loc.apply(ACC, '1001', [binding(clock, 'sip:a@192.0.2.10', 60)], []);
    assert.equal(c.added.length, 1);
  });

  it('several contacts expire independently; one left keeps the end-user registered', () => {
    loc.apply(ACC, '1001', [binding(clock, 'sip:a@h', 60), binding(clock, 'sip:b@h', 120)], []);
    clock.advance(90_000);
    assert.deepEqual(loc.sweep(), []);
    assert.deepEqual(
      loc.lookup(ACC, '1001').map((b) => b.contact),
      ['sip:b@h'],
    );
    assert.deepEqual([...loc.addressesFor(ACC, '1001')], ['192.0.2.10']);
    clock.advance(30_000);
    assert.equal(loc.sweep().length, 1);
  });

  it('removal of one contact and removeAll', () => {
    loc.apply(ACC, '1001', [binding(clock, 'sip:a@h', 60), binding(clock, 'sip:b@h', 60)], []);
    const c = loc.apply(ACC, '1001', [], ['sip:a@h', 'sip:unknown@h']);
    assert.equal(c.removed.length, 1);
    assert.equal(c.current.length, 1);
    assert.equal(loc.removeAll(ACC, '1001').length, 1);
    assert.equal(loc.isRegistered(ACC, '1001'), false);
    assert.deepEqual(loc.sweep(), [], 'removed bindings are not reported by the sweep');
  });

  it('lookup is per account and extension', () => {
    loc.apply(ACC, '1001', [binding(clock, 'sip:a@h', 60)], []);
    assert.equal(loc.lookup(ACC, '1002').length, 0);
    assert.equal(loc.lookup('22222222-2222-4222-8222-222222222222', '1001').length, 0);
  });

  it('call slots: max_concurrent calls per token, released slots reusable, never below zero', () => {
    assert.equal(loc.acquireCallSlot('t', 2), true);
    assert.equal(loc.acquireCallSlot('t', 2), true);
    assert.equal(loc.acquireCallSlot('t', 2), false);
    assert.equal(loc.activeCallsFor('t'), 2);
    assert.equal(loc.activeCallsFor('other'), 0);
    assert.throws(
      () => loc.takeCallSlot('t', 2),
      (e: CallSlotsExhaustedError) => e.code === 'PHONE_TOKEN_MAX_CONCURRENT',
    );
    loc.releaseCallSlot('t');
    assert.equal(loc.acquireCallSlot('t', 2), true);
    loc.releaseCallSlot('t');
    loc.releaseCallSlot('t');
    loc.releaseCallSlot('t');
    assert.equal(loc.activeCallsFor('t'), 0);
    assert.equal(loc.acquireCallSlot('t', 0), false, 'a token allowing no calls');
  });

  it('dropFlow removes the stream bindings of a closed connection and reports end-users left with none', () => {
    const l = new LocationService({ clock });
    l.apply(ACC, '1001', [binding(clock, 'sip:tcp@h', 60, { transport: 'TCP', flowId: 'tcp:1' })], []);
    l.apply(
      ACC,
      '1002',
      [
        binding(clock, 'sip:ws@h', 60, { transport: 'WS', flowId: 'ws:7' }),
        binding(clock, 'sip:udp@h', 60, { transport: 'UDP', flowId: 'udp:x' }),
      ],
      [],
    );
    assert.deepEqual(
      l.dropFlow('tcp:1').map((u) => u.extension),
      ['1001'],
    );
    assert.equal(l.isRegistered(ACC, '1001'), false);
    assert.deepEqual(l.dropFlow('ws:7'), [], '1002 still has its UDP binding');
    assert.deepEqual(
      l.lookup(ACC, '1002').map((b) => b.contact),
      ['sip:udp@h'],
    );
    assert.deepEqual(l.dropFlow('udp:x'), [], 'UDP has no connection to lose');
    assert.equal(l.size, 1);
  });
});
