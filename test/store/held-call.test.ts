import assert from 'node:assert/strict';
import {
  findCallAnyAccount,
  inTransaction,
  insertAccount,
  insertCall,
  updateCall,
  updateHeldCall,
  LIVE_CALL_STATUSES,
  type CallRow,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/**
 * updateHeldCall (the call lifecycle's writes): the row it answers, made from the row held and the patch without
 * RETURNING, is the row the store then holds, and its compare-and-set on the status refuses as updateCall's does.
 */
for (const kind of BOTH_DBS) {
  describe(`updateHeldCall on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let accountId: string;
    before(async () => {
      db = await kind.open();
      accountId = (await insertAccount(db, 'Held')).id;
    });
    after(async () => db?.destroy());

    const newCall = () =>
      insertCall(db, { account_id: accountId, direction: 'inbound', from_number: '+254711000001', to_number: '+2542' });
    const stored = async (id: string): Promise<CallRow> => (await findCallAnyAccount(db, id))!;

    it('answers the row the store holds after each step of a call (ringing, answered, ended)', async () => {
      let row = await newCall();
      row = (await updateHeldCall(db, row, { status: 'ringing' }, ['initiated']))!;
      assert.deepEqual(row, await stored(row.id));
      row = (await updateHeldCall(db, row, { status: 'answered', answered_at: '2026-11-24T10:00:01.000Z' }, [
        'initiated',
        'ringing',
      ]))!;
      assert.deepEqual(row, await stored(row.id));
      const end = {
        status: 'completed' as const,
        reason_code: 'CALL.0200',
        reason_label: 'Completed',
        ended_at: '2026-11-24T10:00:31.000Z',
        duration_seconds: 31,
        talk_seconds: 30,
        cost_cents: 125,
      };
      const ended = await updateHeldCall(db, row, end, LIVE_CALL_STATUSES);
      assert.deepEqual(ended, await stored(row.id));
      // As updateCall would have answered it.
      const viaReturning = await updateCall(db, row.id, { cost_cents: 125 });
      assert.deepEqual(ended, viaReturning);
    });

    it('refuses when the status is no longer one it may change (another writer ended the call)', async () => {
      const row = await newCall();
      await updateCall(db, row.id, { status: 'failed', ended_at: '2026-11-24T10:00:00.000Z' });
      assert.equal(await updateHeldCall(db, row, { status: 'ringing' }, ['initiated']), undefined);
      assert.equal((await stored(row.id)).status, 'failed');
    });

    it('counts the rows it changed inside a transaction too', async () => {
      const row = await newCall();
      const after = await inTransaction(db, (tx) => updateHeldCall(tx, row, { status: 'ringing' }, ['initiated']));
      assert.equal(after?.status, 'ringing');
      const again = await inTransaction(db, (tx) => updateHeldCall(tx, row, { status: 'ringing' }, ['initiated']));
      assert.equal(again, undefined);
    });
  });
}
