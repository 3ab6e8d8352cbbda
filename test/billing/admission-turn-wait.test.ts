import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { insertAccount, updateAccount } from '../../store/index.js';
import { post, StoreAdmission } from '../../billing/index.js';
import { sqliteDb } from '../support/db.js';

/** Overload control reads how long new calls wait for their account's admission turn (issue 20). */
describe('admission: the wait for an account turn is measured', () => {
  let db: Db;
  before(async () => {
    db = await sqliteDb.open();
  });
  after(async () => db?.destroy());

  it('a call queued behind a slow admission of its account shows as a growing wait, then the longest wait', async () => {
    const a = await insertAccount(db, 'Queue');
    // At its cap of one call with one being placed, the second call takes the account's turn and waits there (far
    // from its limits it would be admitted at once).
    await updateAccount(db, a.id, { max_concurrent_calls: 1, max_cps: 100 });
    await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 100_000 });
    let now = 1000;
    const admission = new StoreAdmission(db, { now: () => now });
    assert.equal(admission.sampleTurnWait(), 0, 'nothing waits');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let placing!: () => void;
    const placingFirst = new Promise<void>((r) => (placing = r));
    const first = admission.admit({ accountId: a.id }, async () => {
      placing();
      await held; // the first call's placement is slow
    });
    await placingFirst;
    const second = admission.admit({ accountId: a.id }, async () => undefined);
    await new Promise((r) => setTimeout(r, 50)); // its reads are done: it waits for the turn, not for the store
    now += 250;
    assert.equal(admission.sampleTurnWait(), 250, 'the second call has waited 250 ms so far');
    now += 150;
    release();
    await Promise.all([first, second]);
    assert.equal(admission.sampleTurnWait(), 400, 'the longest wait since the last sample');
    assert.equal(admission.sampleTurnWait(), 0, 'read once');
  });
});
