import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { insertAccount, addDestinationRule, removeDestinationRule } from '../../store/index.js';
import { checkDestination } from '../../billing/index.js';
import { BOTH_DBS } from '../support/db.js';

for (const kind of BOTH_DBS) {
  describe(`destination rules (toll fraud) on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('with no rules every destination is allowed', async () => {
      const a = await insertAccount(db, 'Open');
      assert.deepEqual(await checkDestination(db, a.id, '+447700900123'), { allowed: true });
    });

    it("an account's allowlist admits only its prefixes; another account is unaffected", async () => {
      const a = await insertAccount(db, 'Kenya only');
      const b = await insertAccount(db, 'Other');
      await addDestinationRule(db, { accountId: a.id, kind: 'allow', prefix: '254' });
      assert.deepEqual(await checkDestination(db, a.id, '+254722000001'), { allowed: true });
      assert.deepEqual(await checkDestination(db, a.id, '+447700900123'), { allowed: false, reason: 'not_allowed' });
      assert.deepEqual(await checkDestination(db, b.id, '+447700900123'), { allowed: true });
    });

    it('a platform block prefix wins over an allowlist, and lifting it restores the destination', async () => {
      const a = await insertAccount(db, 'Blocked');
      await addDestinationRule(db, { accountId: a.id, kind: 'allow', prefix: '2549' });
      await addDestinationRule(db, { accountId: null, kind: 'block', prefix: '254900' });
      assert.deepEqual(await checkDestination(db, a.id, '+254900123456'), {
        allowed: false,
        reason: 'blocked',
        prefix: '254900',
      });
      assert.equal(
        await addDestinationRule(db, { accountId: null, kind: 'block', prefix: '254900' }),
        false,
        'an identical rule is kept once',
      );
      assert.equal(await removeDestinationRule(db, { accountId: null, kind: 'block', prefix: '254900' }), true);
      assert.deepEqual(await checkDestination(db, a.id, '+254900123456'), { allowed: true });
    });
  });
}
