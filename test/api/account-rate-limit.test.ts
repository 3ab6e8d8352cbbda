import assert from 'node:assert/strict';
import { insertApiKey } from '../../store/index.js';
import { RequestRateLimiter } from '../../api/rate-limit.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';

describe("api abuse: per-account rate limit over all of an account's keys", function () {
  this.timeout(30000);
  let h: ApiHarness;
  let t: Tenant;
  let other: Tenant;
  let clock = 1_000_000;

  before(async () => {
    // Per key: 2/s, burst 4. Per account: 3/s, burst 6. On a clock the test moves.
    const rateLimiter = new RequestRateLimiter({ ratePerSecond: 2, burst: 4, clock: { now: () => clock } });
    const accountRateLimiter = new RequestRateLimiter({ ratePerSecond: 3, burst: 6, clock: { now: () => clock } });
    h = await ApiHarness.start(sqliteDb, { rateLimiter, accountRateLimiter });
    t = await h.tenant('Many keys', 0);
    other = await h.tenant('Neighbour', 0);
  });
  after(async () => h?.stop());

  const account = (key: string) => h.req('GET', '/api/account', { key });

  it('an account that mints many keys gets no more than the account burst, then the account rate', async () => {
    clock += 60_000;
    // Twenty keys, each with a full per-key bucket of 4: eighty requests' worth, if keys were all that counted.
    const keys = [t.key];
    for (let i = 0; i < 19; i++) keys.push((await insertApiKey(h.db, t.accountId, `k${i}`)).key);
    let ok = 0;
    let last;
    for (const k of keys)
      for (let i = 0; i < 4; i++) {
        const r = await account(k);
        if (r.status === 200) ok++;
        else last = r;
      }
    assert.equal(ok, 6, 'the account burst');
    assert.equal(last!.status, 429);
    assert.equal(last!.body.code, 'RATE_LIMITED');
    assert.match(last!.body.detail, /account/);
    assert.equal(last!.headers.get('retry-after'), '1');
    // Ten seconds later: the account bucket is full again (6), never more, however many keys ask.
    clock += 10_000;
    ok = 0;
    for (const k of keys) if ((await account(k)).status === 200) ok++;
    assert.equal(ok, 6);
    // Sustained: one second refills three requests' worth for the account as a whole.
    clock += 1_000;
    ok = 0;
    for (const k of keys) if ((await account(k)).status === 200) ok++;
    assert.equal(ok, 3);
  });

  it('keys minted through the API count against the same account bucket', async () => {
    clock += 60_000;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await h.req('POST', '/api/keys/create', { key: t.key, body: { name: `api-${i}` } });
      if (r.status === 201) made.push(r.body.key);
    }
    assert.equal(made.length, 4, "the first key's own burst");
    // Four requests spent of the account's six: two left, whatever key asks.
    const statuses = [];
    for (const k of made) statuses.push((await account(k)).status);
    assert.deepEqual(statuses, [200, 200, 429, 429]);
  });

  it('another account is unaffected, and call placement stays exempt', async () => {
    clock += 60_000;
    for (let i = 0; i < 8; i++) await account(t.key);
    assert.equal((await account(t.key)).status, 429);
    assert.equal((await account(other.key)).status, 200);
    const r = await h.req('GET', '/api/calls/hangup?sid=CAnone', { key: t.key });
    assert.notEqual(r.status, 429, r.text);
  });
});
