import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { insertAccount, insertCall, setRate, updateAccount } from '../../store/index.js';
import { post } from '../../billing/index.js';
import { StoreAdmission, AdmissionRefusedError } from '../../billing/admission.js';
import { BOTH_DBS } from '../support/db.js';

for (const kind of BOTH_DBS) {
  describe(`admission under concurrency on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
      await setRate(db, 'outbound', 200); // 2.00 a minute
    });
    after(async () => db?.destroy());

    it('200 concurrent placements against a balance covering 5 first minutes admit exactly 5', async () => {
      const a = await insertAccount(db, 'Race');
      await updateAccount(db, a.id, { max_concurrent_calls: 1000, max_cps: 1000 });
      await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 1000 });
      const admission = new StoreAdmission(db);
      const results = await Promise.allSettled(
        Array.from({ length: 200 }, () =>
          admission.admit({ accountId: a.id, to: '+254722000001' }, () =>
            insertCall(db, {
              account_id: a.id,
              direction: 'outbound',
              from_number: '+254700000001',
              to_number: '+254722000001',
            }),
          ),
        ),
      );
      const admitted = results.filter((r) => r.status === 'fulfilled').length;
      const refused = results.filter(
        (r) => r.status === 'rejected' && (r.reason as AdmissionRefusedError).code === 'BILL.0402',
      );
      assert.equal(admitted, 5);
      assert.equal(refused.length, 195);
      assert.equal((await db('calls').where({ account_id: a.id })).length, 5, 'a refused call is never written');
      assert.equal(
        (await db('wallet_transactions').where({ account_id: a.id, direction: 'debit' })).length,
        0,
        'nothing billed',
      );
    });

    it('the concurrency cap plus 50 simultaneous placements establish exactly the cap', async () => {
      const a = await insertAccount(db, 'Cap');
      await updateAccount(db, a.id, { max_concurrent_calls: 7, max_cps: 1000 });
      await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 1_000_000 });
      const admission = new StoreAdmission(db);
      const results = await Promise.allSettled(
        Array.from({ length: 57 }, () =>
          admission.admit({ accountId: a.id, to: '+254722000001' }, () =>
            insertCall(db, {
              account_id: a.id,
              direction: 'outbound',
              from_number: '+254700000001',
              to_number: '+254722000001',
            }),
          ),
        ),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 7);
      const codes = new Set(
        results.filter((r) => r.status === 'rejected').map((r) => (r.reason as AdmissionRefusedError).code),
      );
      assert.deepEqual([...codes], ['LIMIT.0429']);
    });
  });
}
