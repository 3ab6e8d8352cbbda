import assert from 'node:assert/strict';
import {
  balanceAndLiveCalls,
  countLiveCalls,
  ensureLiveCallTriggers,
  insertAccount,
  insertCall,
  updateCall,
  LIVE_CALL_STATUSES,
  type CallStatus,
  type Db,
} from '../../store/index.js';
import { COUNTED_LIVE_STATUSES } from '../../store/live-calls.js';
import { BOTH_DBS } from '../support/db.js';

/**
 * What admission reads (balanceAndLiveCalls): the account's live calls, kept by triggers on SQLite (migration 030)
 * and counted on PostgreSQL; either way the same figure as counting the rows, whatever writes them.
 */
for (const kind of BOTH_DBS) {
  describe(`the live calls admission reads, on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    const call = (accountId: string, status: CallStatus = 'initiated') =>
      insertCall(db, {
        account_id: accountId,
        direction: 'inbound',
        from_number: '+254711000001',
        to_number: '+2542',
        status,
      });
    const live = async (accountId: string) => (await balanceAndLiveCalls(db, accountId))!.live;

    it('follows inserts, the status crossing between live and ended either way, and deletes, per account', async () => {
      const a = (await insertAccount(db, 'Live A')).id;
      const b = (await insertAccount(db, 'Live B')).id;
      assert.equal(await live(a), 0, 'an account without calls');
      const calls = [];
      for (let i = 0; i < 5; i++) calls.push(await call(a));
      await call(a, 'completed'); // written ended (a record of a call refused at once, say)
      await call(b);
      assert.equal(await live(a), 5);
      assert.equal(await live(b), 1);
      await updateCall(db, calls[0]!.id, { status: 'ringing' }); // live to live: no change
      await updateCall(db, calls[1]!.id, { status: 'answered' });
      await updateCall(db, calls[2]!.id, { status: 'completed' });
      await updateCall(db, calls[3]!.id, { status: 'failed' });
      assert.equal(await live(a), 3);
      await updateCall(db, calls[3]!.id, { status: 'answered' }); // a repair puts it back
      assert.equal(await live(a), 4);
      await db('calls').where({ id: calls[4]!.id }).delete();
      await db('calls').where({ id: calls[2]!.id }).delete(); // an ended call: no change
      assert.equal(await live(a), 3);
      assert.equal(await live(a), await countLiveCalls(db, a), 'the same as counting the rows');
      assert.equal(await live(b), await countLiveCalls(db, b));
      assert.equal((await balanceAndLiveCalls(db, a))!.balanceCents, 0);
    });

    it('an unknown account reads as none', async () => {
      assert.equal(await balanceAndLiveCalls(db, '00000000-0000-7000-8000-000000000000'), undefined);
    });

    if (kind.name === 'sqlite') {
      it('triggers lost with a rebuilt calls table are made again at start, and the count taken afresh', async () => {
        const a = (await insertAccount(db, 'Rebuilt')).id;
        await call(a);
        assert.equal(await ensureLiveCallTriggers(db), false, 'all there: nothing to do');
        for (const t of ['calls_live_ai', 'calls_live_au', 'calls_live_ad']) await db.raw(`drop trigger ${t}`);
        await call(a);
        await call(a);
        assert.equal(await live(a), 1, 'the count fell behind without its triggers');
        assert.equal(await ensureLiveCallTriggers(db), true);
        assert.equal(await live(a), 3);
        await call(a);
        assert.equal(await live(a), 4, 'and follows again');
      });
    }
  });
}

describe('the statuses the live-call triggers count', () => {
  it('are the live statuses of calls.ts', () => {
    assert.deepEqual([...COUNTED_LIVE_STATUSES], [...LIVE_CALL_STATUSES]);
  });
});
