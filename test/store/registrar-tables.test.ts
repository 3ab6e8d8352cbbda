import assert from 'node:assert/strict';
import {
  findEndUserAnyAccount,
  findEndUserByExtension,
  insertAccount,
  insertEndUser,
  insertPhoneToken,
  recentPhoneTokens,
  resetRegistrationStates,
  setRegistrationState,
  updateEndUser,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** The store functions sip/registrar and the end-user call flow work through (end_users, phone_tokens). */
for (const kind of BOTH_DBS) {
  describe(`store: registrar tables on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('finds an end-user by extension, enabled or not, or only enabled', async () => {
      const a = await insertAccount(db, 'Ext');
      const u = await insertEndUser(db, a.id, 'e@example.com', 'E');
      await updateEndUser(db, a.id, u.id, { is_active: false });
      const found = await findEndUserByExtension(db, a.id, u.extension_number);
      assert.equal(found?.id, u.id);
      assert.equal(found?.is_active, false);
      assert.equal(await findEndUserByExtension(db, a.id, u.extension_number, { activeOnly: true }), undefined);
      await updateEndUser(db, a.id, u.id, { is_active: true });
      assert.equal((await findEndUserByExtension(db, a.id, u.extension_number, { activeOnly: true }))?.id, u.id);
      assert.equal(await findEndUserByExtension(db, '', u.extension_number), undefined);
    });

    it('writes registration states, and resets them all but the restored ones in one go', async () => {
      const a = await insertAccount(db, 'Reg');
      const u1 = await insertEndUser(db, a.id, 'r1@example.com', 'R1');
      const u2 = await insertEndUser(db, a.id, 'r2@example.com', 'R2');
      const at = '2024-01-01T00:00:00.000Z';
      await setRegistrationState(db, u1.id, 'registered', at);
      await setRegistrationState(db, u2.id, 'registered');
      const r1 = await findEndUserAnyAccount(db, u1.id);
      assert.deepEqual([r1?.registration_state, r1?.last_registered_at], ['registered', at]);
      assert.equal((await findEndUserAnyAccount(db, u2.id))?.last_registered_at, null);
      await resetRegistrationStates(db, [u2.id, u2.id]);
      assert.equal((await findEndUserAnyAccount(db, u1.id))?.registration_state, 'unregistered');
      assert.equal((await findEndUserAnyAccount(db, u2.id))?.registration_state, 'registered');
    });

    it('lists an end-user’s most recent phone tokens, newest first, bounded', async () => {
      const a = await insertAccount(db, 'Tokens');
      const u = await insertEndUser(db, a.id, 't@example.com', 'T');
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const t = await insertPhoneToken(db, {
          account_id: a.id,
          end_user_id: u.id,
          extension_number: u.extension_number,
          max_concurrent: 2,
          expires_at: '2999-01-01T00:00:00.000Z',
          issued_at: 1700000000 + i,
        });
        ids.push(t.id);
        await new Promise((r) => setTimeout(r, 5)); // distinct created_at
      }
      const rows = await recentPhoneTokens(db, a.id, u.id, 2);
      assert.deepEqual(
        rows.map((r) => r.id),
        [ids[2], ids[1]],
      );
      assert.equal(rows[0].issued_at, 1700000002, 'a number on both stores (bigint is a string from pg)');
      assert.equal(rows[0].max_concurrent, 2);
      assert.deepEqual(await recentPhoneTokens(db, '', '', 2), []);
    });
  });
}
