import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import {
  insertAccount,
  insertApiKey,
  findApiKeyByHash,
  sha256Hex,
  addPoolNumbers,
  listPool,
  isUniqueViolation,
  insertTrunk,
  listTrunks,
  setRate,
  listRates,
  ConflictError,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

for (const kind of BOTH_DBS) {
  describe(`store on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('creates an account with the spec default caps and a signing secret', async () => {
      const a = await insertAccount(db, 'Acme');
      assert.equal(a.status, 'active');
      assert.equal(a.balance_cents, 0);
      assert.equal(a.max_concurrent_calls, 50);
      assert.equal(a.max_cps, 10);
      assert.match(a.signing_secret, /^whsec_/);
    });

    it('stores only the hash of an API key and finds it by that hash', async () => {
      const a = await insertAccount(db, 'Keys');
      const { row, key } = await insertApiKey(db, a.id, 'first');
      assert.notEqual(row.key_hash, key);
      assert.equal(row.prefix, key.slice(0, row.prefix.length));
      const found = await findApiKeyByHash(db, sha256Hex(key));
      assert.equal(found?.id, row.id);
      const raw = await db('api_keys').where({ id: row.id }).first();
      assert.ok(!JSON.stringify(raw).includes(key), 'the secret itself is nowhere in the row');
    });

    it('keeps numbers unique in the pool', async () => {
      assert.equal(await addPoolNumbers(db, ['+254711000001', '+254711000002']), 2);
      assert.equal(await addPoolNumbers(db, ['+254711000001']), 0);
      assert.equal((await listPool(db)).length, 2);
    });

    it('enforces one email and one extension per account, but allows them across accounts', async () => {
      const a = await insertAccount(db, 'A');
      const b = await insertAccount(db, 'B');
      const row = (acc: string, email: string, ext: string) => ({
        id: crypto.randomUUID(),
        account_id: acc,
        email,
        extension_number: ext,
        created_at: new Date().toISOString(),
      });
      await db('end_users').insert(row(a.id, 'x@example.com', '1001'));
      await db('end_users').insert(row(b.id, 'x@example.com', '1001'));
      await assert.rejects(db('end_users').insert(row(a.id, 'x@example.com', '1002')), (e) => isUniqueViolation(e));
      await assert.rejects(db('end_users').insert(row(a.id, 'y@example.com', '1001')), (e) => isUniqueViolation(e));
    });

    it('keeps idempotency keys unique per account', async () => {
      const a = await insertAccount(db, 'Idem');
      const row = {
        account_id: a.id,
        key: 'k1',
        scope: 'originate',
        request_hash: 'h',
        state: 'in_flight',
        created_at: 'x',
        expires_at: 'y',
      };
      await db('idempotency_keys').insert(row);
      await assert.rejects(db('idempotency_keys').insert(row), (e) => isUniqueViolation(e));
    });

    it('stores trunks with their inbound addresses and refuses a duplicate name', async () => {
      const t = await insertTrunk(db, {
        name: 'carrier1',
        host: '127.0.0.1',
        port: 5080,
        transport: 'udp',
        username: null,
        password: null,
        inbound_addresses: ['127.0.0.1'],
      });
      assert.deepEqual(t.inbound_addresses, ['127.0.0.1']);
      await assert.rejects(insertTrunk(db, { ...t }), ConflictError);
      assert.equal((await listTrunks(db)).length, 1);
    });

    it('replaces a rate set twice for the same kind and prefix', async () => {
      await setRate(db, 'outbound', 300, '254');
      await setRate(db, 'outbound', 250, '254');
      const rates = (await listRates(db)).filter((r) => r.kind === 'outbound');
      assert.deepEqual(
        rates.map((r) => [r.prefix, r.amount_cents]),
        [['254', 250]],
      );
    });
  });
}
