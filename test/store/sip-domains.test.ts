import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  accountIdOfSipLabel,
  getAccount,
  insertAccount,
  isValidSipLabel,
  setAccountSipLabel,
  sipLabelOf,
  type Db,
} from '../../store/index.js';
import { migrationSource } from '../../store/migrations/index.js';
import { BOTH_DBS } from '../support/db.js';

/** Issue 19 item 6: each account's readable SIP domain label (store/sip-domains.ts, migration 019). */
describe('store: SIP domain labels', () => {
  it('derives a label a person can type from the account name', () => {
    assert.equal(sipLabelOf('Acme Ltd.'), 'acme-ltd');
    assert.equal(sipLabelOf('  Café   21 '), 'cafe-21');
    assert.equal(sipLabelOf('42'), 'a-42');
    assert.equal(sipLabelOf('***'), 'account');
    assert.equal(sipLabelOf('x'.repeat(100)).length, 40);
    assert.equal(
      sipLabelOf('0b6d1f2e-0000-4000-8000-000000000000'),
      'a-0b6d1f2e-0000-4000-8000-000000000000'.slice(0, 40),
    );
    for (const bad of ['', '1abc', 'a_b', 'a--b', 'ab-', 'A'.repeat(64), 'abcdef12-0000-4000-8000-000000000000']) {
      assert.equal(isValidSipLabel(bad), false, bad);
    }
    assert.equal(isValidSipLabel('acme-2'), true);
  });
});

for (const kind of BOTH_DBS) {
  describe(`store: SIP domain labels on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('a new account gets its label, numbered on a clash; the operator changes it; lookups follow', async () => {
      const tag = `t${Date.now() % 1e6}`;
      const a = await insertAccount(db, `Acme ${tag}`);
      const b = await insertAccount(db, `ACME ${tag}!`);
      assert.equal(a.sip_label, `acme-${tag}`);
      assert.equal(b.sip_label, `acme-${tag}-2`);
      assert.equal(await accountIdOfSipLabel(db, `acme-${tag}`), a.id);
      assert.equal(await accountIdOfSipLabel(db, `ACME-${tag}-2`), b.id);
      assert.equal(await accountIdOfSipLabel(db, 'nobody'), undefined);
      await assert.rejects(setAccountSipLabel(db, b.id, `acme-${tag}`), { code: 'SIP_DOMAIN_TAKEN' });
      await assert.rejects(setAccountSipLabel(db, b.id, '9lives'), { code: 'INVALID_SIP_DOMAIN' });
      await setAccountSipLabel(db, b.id, `Roadrunner-${tag}`);
      assert.equal((await getAccount(db, b.id)).sip_label, `roadrunner-${tag}`);
      // The cached lookups see the change at once (the write went through the store's knex instance).
      assert.equal(await accountIdOfSipLabel(db, `acme-${tag}-2`), undefined);
      assert.equal(await accountIdOfSipLabel(db, `roadrunner-${tag}`), b.id);
    });

    it('migration 019 gives every existing account a label from its name', async () => {
      for (;;) {
        const [done] = (await db.migrate.list({ migrationSource })) as [Array<{ name: string }>, unknown];
        if (!done.some((m) => m.name === '019-account-sip-domain')) break;
        await db.migrate.down({ migrationSource });
      }
      const ids = [randomUUID(), randomUUID()];
      for (const [i, id] of ids.entries()) {
        await db('accounts').insert({
          id,
          name: 'Old Shop',
          status: 'active',
          balance_cents: 0,
          signing_secret: 'whsec_old',
          created_at: `2024-01-0${i + 1}T00:00:00.000Z`,
        });
      }
      await db.migrate.latest({ migrationSource });
      const labels = await Promise.all(ids.map(async (id) => (await getAccount(db, id)).sip_label));
      assert.deepEqual(labels, ['old-shop', 'old-shop-2']);
    });
  });
}
