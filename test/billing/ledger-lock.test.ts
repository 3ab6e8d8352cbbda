import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { inTransaction, insertAccount, lockAccountBalance } from '../../store/index.js';
import { post } from '../../billing/index.js';
import { postgresDb } from '../support/db.js';
import { insertOutboundCall } from '../support/outbound-call.js';

/**
 * A ledger post locks the account row until its transaction ends (PostgreSQL). The lock must serialise ledger posts
 * and nothing else: every row that references the account (a call, its events, its credit row) takes a KEY SHARE
 * lock on it for the foreign-key check, and FOR UPDATE conflicts with that, so under FOR UPDATE a busy account's
 * new calls queued behind each settlement (the carrier bench on PostgreSQL). SQLite has one writer: nothing to test.
 */
describe('the account lock of a ledger post on postgres', function () {
  this.timeout(60000);
  let db: Db;
  before(async () => {
    db = await postgresDb.open();
  });
  after(async () => db?.destroy());

  const newCall = (accountId: string) => insertOutboundCall(db, accountId);

  it("does not hold up the account's new call rows while it is held", async () => {
    const a = await insertAccount(db, 'Busy');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const tx = inTransaction(db, async (trx) => {
      await lockAccountBalance(trx, a.id);
      locked();
      await held;
    });
    await isLocked;
    try {
      // Under FOR UPDATE this insert waits for the transaction above, which waits for it: the deadline decides.
      const inserted = await Promise.race([
        newCall(a.id).then(() => 'inserted'),
        new Promise<string>((r) => setTimeout(() => r('waited for the ledger lock'), 3000).unref()),
      ]);
      assert.equal(inserted, 'inserted');
    } finally {
      release();
      await tx;
    }
  });

  it('still serialises concurrent ledger posts of the account', async () => {
    const a = await insertAccount(db, 'Posts');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 5 }),
      ),
    );
    const rows = await db('wallet_transactions').where({ account_id: a.id }).orderBy('seq');
    assert.deepEqual(
      rows.map((r: { seq: number }) => Number(r.seq)),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    rows.forEach((r: { balance_before_cents: number }, i: number) =>
      assert.equal(Number(r.balance_before_cents), i * 5),
    );
    assert.equal(Number((await db('accounts').where({ id: a.id }).first()).balance_cents), 100);
  });
});
