import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  findAccount,
  getAccount,
  inTransaction,
  insertAccount,
  migrate,
  openDb,
  setAccountBalance,
  sqlOf,
  type Db,
  type Tx,
} from '../../store/index.js';

/**
 * Transactions on the switch's SQLite writer (store/driver/sqlite.ts) run as a savepoint inside the group commit
 * and keep every property of a transaction: atomic, isolated from statements issued outside it meanwhile, nested
 * savepoints, and a handle that is dead once it has ended.
 */
describe('store: transactions on the switch SQLite writer', function () {
  this.timeout(30000);
  let db: Db;
  const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

  beforeEach(async () => {
    db = openDb({ databaseUrl: '', dataDir: mkdtempSync(path.join(os.tmpdir(), 'simu-dtx-')), groupCommit: true });
    await migrate(db);
  });
  afterEach(async () => {
    await Promise.race([db?.destroy(), new Promise((r) => setTimeout(r, 1000))]);
  });

  it('sends no BEGIN or COMMIT of its own (a savepoint in the group) and commits what it wrote', async () => {
    const seen: string[] = [];
    const listen = (q: { sql: string }) => seen.push(q.sql);
    db.on('query', listen);
    try {
      const a = await inTransaction(db, async (tx) => {
        const row = await insertAccount(tx, 'in tx');
        await setAccountBalance(tx, row.id, 500);
        return row;
      });
      assert.equal((await getAccount(db, a.id)).balance_cents, 500);
      assert.ok(
        seen.some((s) => /update "accounts"/.test(s)),
        'statements are seen',
      );
      assert.deepEqual(
        seen.filter((s) => /^(BEGIN|COMMIT|ROLLBACK)/i.test(s)),
        [],
        'no transaction control of its own',
      );
    } finally {
      db.off('query', listen);
    }
  });

  it('a statement issued outside while it runs waits for it, and is not undone by its rollback', async () => {
    const base = await insertAccount(db, 'base');
    const order: string[] = [];
    let outside: Promise<unknown> | undefined;
    await assert.rejects(
      inTransaction(db, async (tx) => {
        await setAccountBalance(tx, base.id, 111);
        order.push('tx wrote');
        // Two statements from outside: an update and an insert.
        outside = Promise.all([
          setAccountBalance(sqlOf(db), base.id, 222).then(() => order.push('outside fixed')),
          insertAccount(db, 'outside').then((a) => (order.push('outside builder'), a)),
        ]);
        await tick();
        assert.equal(order.length, 1, 'nothing from outside ran inside the transaction');
        await tx.run('update "accounts" set "balance_cents" = 333 where "id" = ?', [base.id], 'accounts');
        assert.equal((await getAccount(tx, base.id)).balance_cents, 333, 'the transaction reads its own writes');
        throw new Error('abort');
      }),
      /abort/,
    );
    const [, made] = (await outside) as [unknown, { id: string }];
    assert.deepEqual(order.slice(0, 1), ['tx wrote']);
    assert.equal((await getAccount(db, base.id)).balance_cents, 222, 'the outside write ran after the rollback');
    assert.ok(await findAccount(db, made.id), 'the outside insert was kept');
  });

  it('a nested transaction that fails undoes only its own writes', async () => {
    const a = await insertAccount(db, 'a');
    await inTransaction(db, async (tx) => {
      await setAccountBalance(tx, a.id, 10);
      await assert.rejects(
        inTransaction(tx, async (inner) => {
          await setAccountBalance(inner, a.id, 20);
          throw new Error('inner');
        }),
        /inner/,
      );
      assert.equal((await getAccount(tx, a.id)).balance_cents, 10);
      await inTransaction(tx, (inner) => setAccountBalance(inner, a.id, 30));
    });
    assert.equal((await getAccount(db, a.id)).balance_cents, 30);
  });

  it('refuses statements on its handle once it has ended', async () => {
    const a = await insertAccount(db, 'a');
    let leaked: Tx | undefined;
    await inTransaction(db, async (tx) => {
      leaked = tx;
    });
    await assert.rejects(setAccountBalance(leaked!, a.id, 5), /already ended/);
    await assert.rejects(leaked!.all('select 1'), /already ended/);
    assert.equal((await getAccount(db, a.id)).balance_cents, 0);
  });

  it('transactions issued together run one after another, each atomic', async () => {
    const a = await insertAccount(db, 'a');
    const bump = () =>
      inTransaction(db, async (tx) => {
        const now = (await getAccount(tx, a.id)).balance_cents;
        await tick(2);
        await setAccountBalance(tx, a.id, now + 1);
      });
    await Promise.all(Array.from({ length: 20 }, bump));
    assert.equal((await getAccount(db, a.id)).balance_cents, 20, 'no lost update');
  });
});
