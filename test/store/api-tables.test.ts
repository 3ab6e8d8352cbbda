import assert from 'node:assert/strict';
import {
  addPoolNumbers,
  configureNumber,
  findApiKeyWithAccount,
  findNumberAnyAccount,
  findNumberByE164,
  inTransaction,
  insertAccount,
  insertApiKey,
  insertAccountWithApiKey,
  listAccounts,
  lockNumber,
  returnNumberToPool,
  revokeApiKey,
  sha256Hex,
  takePoolNumber,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** The store functions the API works through for authentication and numbers. */
for (const kind of BOTH_DBS) {
  describe(`store: api tables on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('finds a key by its hash with its account, typed alike on both stores', async () => {
      const a = await insertAccount(db, 'Auth');
      const { row, key } = await insertApiKey(db, a.id, 'k');
      const found = await findApiKeyWithAccount(db, sha256Hex(key));
      assert.equal(found?.apiKeyId, row.id);
      assert.equal(found?.keyHash, sha256Hex(key));
      assert.equal(found?.active, true);
      assert.equal(found?.account.id, a.id);
      assert.equal(found?.account.balance_cents, 0, 'a number, not a bigint string');
      await revokeApiKey(db, a.id, row.id);
      assert.equal((await findApiKeyWithAccount(db, sha256Hex(key)))?.active, false);
      assert.equal(await findApiKeyWithAccount(db, sha256Hex('nope')), undefined);
    });

    it('creates an account and its first key together', async () => {
      const { account, key } = await insertAccountWithApiKey(db, 'WithKey', 'default');
      const found = await findApiKeyWithAccount(db, sha256Hex(key));
      assert.equal(found?.account.id, account.id);
      assert.ok((await listAccounts(db)).some((a) => a.id === account.id));
    });

    it('takes a pool number once, configures it for its owner only, and returns it clean', async () => {
      const a = await insertAccount(db, 'Nums');
      const b = await insertAccount(db, 'Other');
      await addPoolNumbers(db, ['+254711000001']);
      const n = (await findNumberByE164(db, '+254711000001'))!;
      const at = new Date().toISOString();
      await inTransaction(db, async (tx) => {
        assert.equal((await lockNumber(tx, n.id))?.account_id, null);
        assert.equal(await takePoolNumber(tx, n.id, a.id, at), true);
      });
      assert.equal(await takePoolNumber(db, n.id, b.id, at), false, 'already owned');
      assert.deepEqual(
        [(await findNumberAnyAccount(db, n.id))?.account_id, (await findNumberAnyAccount(db, n.id))?.is_active],
        [a.id, true],
      );
      assert.equal(await configureNumber(db, b.id, n.id, { friendly_name: 'x' }), undefined);
      assert.equal((await configureNumber(db, a.id, n.id, {}))?.friendly_name, '');
      const c = await configureNumber(db, a.id, n.id, { friendly_name: 'Main', webhook_status: 'https://s.example/' });
      assert.deepEqual([c?.friendly_name, c?.webhook_status], ['Main', 'https://s.example/']);
      assert.equal(await returnNumberToPool(db, b.id, n.id), false);
      assert.equal(await returnNumberToPool(db, a.id, n.id), true);
      const back = await findNumberAnyAccount(db, n.id);
      assert.deepEqual(
        [back?.account_id, back?.is_active, back?.friendly_name, back?.webhook_status, back?.acquired_at],
        [null, false, '', '', null],
      );
    });
  });
}
