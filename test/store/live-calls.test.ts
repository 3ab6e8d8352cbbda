import assert from 'node:assert/strict';
import { balanceAndLiveCalls, insertAccount, insertCall, type Db } from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/**
 * What admission reads for a new call (store/calls.ts balanceAndLiveCalls): the balance and the account's live
 * calls counted up to its cap, so the read's cost does not grow with an account's traffic past what decides.
 */
for (const kind of BOTH_DBS) {
  describe(`admission's read of live calls on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let accountId: string;
    before(async () => {
      db = await kind.open();
      accountId = (await insertAccount(db, 'Live')).id;
      const call = (status: 'initiated' | 'ringing' | 'answered' | 'completed' | 'failed') =>
        insertCall(db, {
          account_id: accountId,
          direction: 'inbound',
          from_number: '+2547',
          to_number: '+2541',
          status,
        });
      for (const s of ['initiated', 'ringing', 'answered', 'answered', 'ringing'] as const) await call(s);
      for (const s of ['completed', 'failed'] as const) await call(s);
    });
    after(async () => db?.destroy());

    it('counts live calls exactly below the bound, and stops at it', async () => {
      assert.equal((await balanceAndLiveCalls(db, accountId, 50))?.live, 5);
      assert.equal((await balanceAndLiveCalls(db, accountId, 5))?.live, 5);
      assert.equal((await balanceAndLiveCalls(db, accountId, 3))?.live, 3);
      assert.equal((await balanceAndLiveCalls(db, accountId, 0))?.live, 0);
    });

    it('reads the balance with it, and nothing for an unknown account', async () => {
      const funds = await balanceAndLiveCalls(db, accountId, 50);
      assert.equal(typeof funds?.balanceCents, 'number');
      assert.equal(await balanceAndLiveCalls(db, '00000000-0000-7000-8000-000000000000', 50), undefined);
    });
  });
}
