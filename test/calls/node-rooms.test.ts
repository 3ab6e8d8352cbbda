import assert from 'node:assert/strict';
import { ManualClock } from '../../kit/index.js';
import { NodeRooms } from '../../calls/node-leg.js';
import type { Db } from '../../store/index.js';
import { roomLogger } from '../../config/index.js';

describe('calls: legs between nodes', () => {
  it('a signed join is taken once: a copy replayed within its age is refused, its nonce forgotten after', () => {
    const clock = new ManualClock(1_000_000);
    const rooms = new NodeRooms({
      db: undefined as unknown as Db,
      nodeId: 'a',
      sipAddress: '127.0.0.1:5060',
      goneAfterMs: 10_000,
      clock,
      log: roomLogger('calls'),
    });
    assert.equal(rooms.firstUse('n1'), true);
    assert.equal(rooms.firstUse('n1'), false, 'replayed');
    assert.equal(rooms.firstUse('n2'), true, 'another join');
    clock.advance(59_000);
    assert.equal(rooms.firstUse('n1'), false, 'still within twice the age');
    clock.advance(2_000);
    assert.equal(rooms.firstUse('n1'), true, 'forgotten once no signature of that age is accepted');
  });
});
