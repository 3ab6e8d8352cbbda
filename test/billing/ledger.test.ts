import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { insertAccount, getAccount } from '../../store/index.js';
import { post, InsufficientFundsError, parseMoney, formatMoney } from '../../billing/index.js';
import { BOTH_DBS } from '../support/db.js';

describe('money', () => {
  it('parses and formats two-decimal strings without floats', () => {
    assert.equal(parseMoney('100.00'), 10000);
    assert.equal(parseMoney('0.1'), 10);
    assert.equal(parseMoney('12'), 1200);
    assert.equal(formatMoney(1234567), '12345.67');
    assert.equal(formatMoney(5), '0.05');
    assert.throws(() => parseMoney('1.234'), /at most two decimals/);
    assert.throws(() => parseMoney('-1'), /not an amount/);
    assert.throws(() => parseMoney('1e3'), /not an amount/);
  });
});

for (const kind of BOTH_DBS) {
  describe(`ledger on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('chains balance_before and never lets the balance go negative under concurrent debits', async () => {
      const a = await insertAccount(db, 'Race');
      await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 1000 });
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, () =>
          post(db, { accountId: a.id, direction: 'debit', kind: 'did_setup', amountCents: 300 }),
        ),
      );
      const ok = results.filter((r) => r.status === 'fulfilled').length;
      const refused = results.filter(
        (r) => r.status === 'rejected' && r.reason instanceof InsufficientFundsError,
      ).length;
      assert.equal(ok, 3);
      assert.equal(refused, 27);
      const acct = await getAccount(db, a.id);
      assert.equal(acct.balance_cents, 100);
      const rows = await db('wallet_transactions').where({ account_id: a.id }).orderBy('seq');
      let running = 0;
      for (const r of rows) {
        assert.equal(Number(r.balance_before_cents), running, `row ${r.seq} chains`);
        running += r.direction === 'credit' ? Number(r.amount_cents) : -Number(r.amount_cents);
      }
      assert.equal(running, 100);
    });

    it('settles a key exactly once', async () => {
      const a = await insertAccount(db, 'Once');
      await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 500 });
      const runs = await Promise.all(
        Array.from({ length: 10 }, () =>
          post(db, {
            accountId: a.id,
            direction: 'debit',
            kind: 'call',
            amountCents: 120,
            settlementKey: 'call:x:talk',
          }),
        ),
      );
      assert.equal(runs.filter((r) => !r.duplicate).length, 1);
      assert.equal((await getAccount(db, a.id)).balance_cents, 380);
    });

    it('caps a settlement at the balance when asked, to zero and not below', async () => {
      const a = await insertAccount(db, 'Cap');
      await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 50 });
      const r = await post(db, {
        accountId: a.id,
        direction: 'debit',
        kind: 'call',
        amountCents: 80,
        capAtBalance: true,
      });
      assert.equal(r.amountCents, 50);
      assert.equal((await getAccount(db, a.id)).balance_cents, 0);
    });
  });
}
