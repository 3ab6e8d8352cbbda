import assert from 'node:assert/strict';
import { setRate, updateAccount } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import * as SH from './shapes.js';

/** Issue 17, item 5: originate takes numbers as people write them and stores them in E.164. */
describe('api: originate reads national and international numbers', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  const DID = '+254711800001';

  before(async () => {
    h = await ApiHarness.start(sqliteDb);
    t = await h.tenant('Numbers', 100_000, DID);
    await setRate(h.db, 'outbound', 100);
  });
  after(async () => h?.stop());

  const originate = (to: string, from: string) =>
    h.req('POST', '/api/calls/originate', { key: t.key, body: { to, from, url: 'http://x.test/' } });

  it('national and 00 forms of to and from are stored in E.164', async () => {
    const r = await originate('0712 345 678', '0711 800001');
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.to_number, '+254712345678');
    assert.equal(r.body.from_number, DID);
    const i = await originate('0044 20 7946 0958', DID);
    assert.equal(i.status, 201, JSON.stringify(i.body));
    assert.equal(i.body.to_number, '+442079460958');
  });

  it("the account's own country reads its national numbers", async () => {
    await updateAccount(h.db, t.accountId, { country: 'GB' });
    try {
      const r = await originate('020 7946 0958', DID);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.to_number, '+442079460958');
    } finally {
      await updateAccount(h.db, t.accountId, { country: null });
    }
  });

  it('what is no number is a 400 naming the field and the reason', async () => {
    for (const [to, code] of [
      ['112', 'NUMBER_SHORT_CODE'],
      ['07123', 'NUMBER_SHORT_CODE'],
      ['0712345', 'NUMBER_INVALID'],
      ['+2547ab', 'NUMBER_CHARACTERS'],
    ]) {
      const r = await originate(to, DID);
      SH.assertError(r, 400, 'VALIDATION_ERROR');
      assert.match(r.body.detail, new RegExp(`"to".*${code}`), to);
    }
  });
});
