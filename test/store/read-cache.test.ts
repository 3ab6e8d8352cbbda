import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  findAccountSettings,
  getSettingCached,
  inTransaction,
  insertAccount,
  migrate,
  openDb,
  putSetting,
  setAccountBalance,
  updateAccount,
  type Db,
} from '../../store/index.js';
import { updateRow } from '../../store/fixed-sql.js';

describe('store: read cache of what every call reads (accounts, numbers, platform settings)', () => {
  let db: Db;
  let reads: number;
  const count = (q: { sql: string }): void => void (/^select \* from .accounts./i.test(q.sql) && reads++);

  beforeEach(async () => {
    db = openDb({ databaseUrl: '', dataDir: mkdtempSync(path.join(os.tmpdir(), 'read-cache-')) });
    await migrate(db);
    reads = 0;
    db.on('query', count);
  });
  afterEach(() => db.destroy());

  it('serves repeated reads from memory and never carries the balance', async () => {
    const a = await insertAccount(db, 'a');
    reads = 0;
    for (let i = 0; i < 5; i++) assert.equal((await findAccountSettings(db, a.id))?.name, 'a');
    assert.equal(reads, 1);
    assert.equal('balance_cents' in (await findAccountSettings(db, a.id))!, false);
  });

  it('concurrent reads of a row not cached yet are one read of the store', async () => {
    const a = await insertAccount(db, 'a');
    reads = 0;
    const names = await Promise.all(Array.from({ length: 5 }, () => findAccountSettings(db, a.id)));
    assert.deepEqual(
      names.map((r) => r?.name),
      ['a', 'a', 'a', 'a', 'a'],
    );
    assert.equal(reads, 1);
  });

  it('a write through any path (store function or raw knex) is seen by the next read', async () => {
    const a = await insertAccount(db, 'a');
    await findAccountSettings(db, a.id);
    await updateAccount(db, a.id, { webhook_status: 'http://x/1' });
    assert.equal((await findAccountSettings(db, a.id))?.webhook_status, 'http://x/1');
    await db('accounts').where({ id: a.id }).update({ status: 'suspended' });
    assert.equal((await findAccountSettings(db, a.id))?.status, 'suspended');
    await findAccountSettings(db, 'none');
    await db('accounts').insert({
      id: 'none',
      name: 'late',
      status: 'active',
      balance_cents: 0,
      signing_secret: 's',
      created_at: new Date().toISOString(),
    });
    assert.equal((await findAccountSettings(db, 'none'))?.name, 'late', 'a cached miss is dropped by an insert');
  });

  it('a balance-only write (the ledger) keeps the entries; a write in a transaction is not cached until it ends', async () => {
    const a = await insertAccount(db, 'a');
    await findAccountSettings(db, a.id);
    reads = 0;
    await inTransaction(db, (tx) => setAccountBalance(tx, a.id, 500));
    await findAccountSettings(db, a.id);
    assert.equal(reads, 0, 'the balance is not cached, so moving it invalidates nothing');
    await inTransaction(db, (tx) => updateRow(tx, 'accounts', { column: 'id', value: a.id }, { max_cps: 7 }));
    assert.equal((await findAccountSettings(db, a.id))?.max_cps, 7);
    assert.equal((await findAccountSettings(db, a.id))?.max_cps, 7);
    assert.equal(reads, 2, 'just after the commit the row is read again rather than cached');
  });

  it("platform settings ('draining') are invalidated by putSetting", async () => {
    assert.equal(await getSettingCached(db, 'draining'), undefined);
    await putSetting(db, 'draining', 'true');
    assert.equal(await getSettingCached(db, 'draining'), 'true');
    await putSetting(db, 'draining', 'false');
    assert.equal(await getSettingCached(db, 'draining'), 'false');
  });
});
