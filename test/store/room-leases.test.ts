import assert from 'node:assert/strict';
import os from 'node:os';
import {
  migrate,
  nodeSecret,
  openDb,
  releaseNodeLeases,
  releaseRoomLease,
  takeRoomLease,
  writeNodeHeartbeat,
  type Db,
  type NodeState,
} from '../../store/index.js';
import { newPostgresDatabase } from '../support/db.js';

/**
 * Room leases (conferences and queues across nodes): the first node to ask holds the room, the others are told
 * where it is; a holder out of service loses it to the next asker; a released or gone node's lease is free again.
 */
describe('room leases, on postgres', function () {
  this.timeout(60000);
  let db: Db;
  let url: string;
  before(async () => {
    url = await newPostgresDatabase();
    db = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
    await migrate(db);
  });
  after(async () => db?.destroy());

  const node = (id: string, state: NodeState, heartbeatAgoMs = 0) =>
    writeNodeHeartbeat(db, {
      id,
      state,
      version: 't',
      sip_address: `${id}.example:5060`,
      http_address: `${id}.example:8080`,
      pid: 1,
      live_calls: 0,
      started_at: new Date().toISOString(),
      heartbeat_at: new Date(Date.now() - heartbeatAgoMs).toISOString(),
    });
  const take = (by: string, name = 'standup') =>
    takeRoomLease(db, {
      kind: 'conference',
      accountId: 'acct-1',
      name,
      node: by,
      sipAddress: `${by}.example:5060`,
      staleBefore: new Date(Date.now() - 10_000).toISOString(),
      now: new Date().toISOString(),
    });

  it('of nodes asking at once exactly one holds the room, and every one is told the same holder', async () => {
    for (const n of ['a', 'b', 'c']) await node(n, 'up');
    const holders = await Promise.all(['a', 'b', 'c', 'a', 'b', 'c'].map((n) => take(n, 'race')));
    assert.equal(new Set(holders.map((h) => h.nodeId)).size, 1, JSON.stringify(holders));
    const h = holders[0]!;
    assert.equal(h.sipAddress, `${h.nodeId}.example:5060`);
  });

  it('a draining holder keeps its room; a gone, stopped or silent one loses it to the next asker', async () => {
    await node('a', 'up');
    await node('b', 'up');
    assert.equal((await take('a')).nodeId, 'a');
    await node('a', 'draining');
    assert.equal((await take('b')).nodeId, 'a', 'draining: still the holder');
    assert.equal((await take('a')).nodeId, 'a', 'draining: its own room goes on');
    for (const [state, ago] of [
      ['gone', 0],
      ['stopped', 0],
      ['up', 60_000],
    ] as const) {
      await node('a', 'up');
      await releaseNodeLeases(db, 'b');
      assert.equal((await take('a')).nodeId, 'a');
      await node('a', state, ago);
      assert.equal((await take('b')).nodeId, 'b', `a holder ${state} ${ago} ms ago loses the room`);
    }
  });

  it('a draining node takes no new room: it is pointed at the up node with the fewest calls, which takes it', async () => {
    await node('a', 'draining');
    await node('b', 'up');
    await node('c', 'gone');
    const h = await take('a', 'fresh');
    assert.equal(h.nodeId, 'b');
    assert.equal(
      await db('room_leases')
        .where({ name: 'fresh' })
        .count({ n: '*' })
        .first()
        .then((r) => Number(r?.n)),
      0,
    );
    assert.equal((await take('b', 'fresh')).nodeId, 'b');
    assert.equal((await take('a', 'fresh')).nodeId, 'b');
    await node('b', 'draining');
    assert.equal((await take('a', 'alone')).nodeId, 'a', 'no node up but itself: it holds the room');
  });

  it('a room released by its holder, or every room of a gone node, is free for the next asker', async () => {
    await node('a', 'up');
    await node('b', 'up');
    await releaseNodeLeases(db, 'a');
    await releaseNodeLeases(db, 'b');
    assert.equal((await take('a', 'one')).nodeId, 'a');
    assert.equal((await take('a', 'two')).nodeId, 'a');
    await releaseRoomLease(db, { kind: 'conference', accountId: 'acct-1', name: 'one', node: 'b' });
    assert.equal((await take('b', 'one')).nodeId, 'a', 'only the holder releases its lease');
    await releaseRoomLease(db, { kind: 'conference', accountId: 'acct-1', name: 'one', node: 'a' });
    assert.equal((await take('b', 'one')).nodeId, 'b');
    assert.equal(await releaseNodeLeases(db, 'a'), 1);
    assert.equal((await take('b', 'two')).nodeId, 'b');
  });

  it('the secret nodes sign their legs with is made once and read alike by every node', async () => {
    const other = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
    try {
      const [s1, s2] = await Promise.all([nodeSecret(db, 'node-leg'), nodeSecret(other, 'node-leg')]);
      assert.equal(s1, s2);
      assert.ok(s1.length >= 40);
      assert.notEqual(await nodeSecret(db, 'another'), s1);
    } finally {
      await other.destroy();
    }
  });
});
