import assert from 'node:assert/strict';
import { addPoolNumbers, getAccount, setRate } from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';
import { ApiHarness } from './harness.js';

/**
 * Money and idempotency under concurrency, on both stores: real HTTP requests against a real server, fired all at
 * once.
 */
for (const kind of BOTH_DBS) {
  describe(`api money and idempotency races on ${kind.name}`, function () {
    this.timeout(120000);
    let h: ApiHarness;
    before(async () => {
      h = await ApiHarness.start(kind);
    });
    after(async () => h?.stop());

    it('50 concurrent acquires against a balance that covers 3 take exactly 3 numbers and the ledger chains', async () => {
      const t = await h.tenant('Race', 3 * 1000 + 500);
      await setRate(h.db, 'did_setup', 1000);
      const numbers = Array.from({ length: 50 }, (_, i) => `+2547101${String(i).padStart(5, '0')}`);
      await addPoolNumbers(h.db, numbers);
      const pool = (await h.req('GET', '/api/numbers/available', { key: t.key })).body.filter((n: any) =>
        numbers.includes(n.number),
      );
      assert.equal(pool.length, 50);
      const replies = await Promise.all(
        pool.map((n: any) => h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid: n.uuid } })),
      );
      const statuses = replies.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 3, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 402).length, 47);
      const owned = await h.db('numbers').where({ account_id: t.accountId });
      assert.equal(owned.length, 3);
      const acct = await getAccount(h.db, t.accountId);
      assert.equal(acct.balance_cents, 500);
      const rows = await h.db('wallet_transactions').where({ account_id: t.accountId }).orderBy('seq');
      let running = 0;
      for (const r of rows) {
        assert.equal(Number(r.balance_before_cents), running, `row ${r.seq} chains`);
        running += r.direction === 'credit' ? Number(r.amount_cents) : -Number(r.amount_cents);
        assert.ok(running >= 0, 'never negative');
      }
      assert.equal(running, 500, 'the ledger sums to the balance');
      assert.equal(rows.filter((r: any) => r.kind === 'did_setup').length, 3);
      await setRate(h.db, 'did_setup', 0);
    });

    it('20 accounts racing for one number: it is owned exactly once and charged once', async () => {
      await setRate(h.db, 'did_setup', 100);
      await addPoolNumbers(h.db, ['+254710900000']);
      const tenants = await Promise.all(Array.from({ length: 20 }, (_, i) => h.tenant(`Racer${i}`, 1000)));
      const uuid = (await h.db('numbers').where({ number: '+254710900000' }).first()).id;
      const replies = await Promise.all(
        tenants.map((t) => h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid } })),
      );
      assert.equal(replies.filter((r) => r.status === 200).length, 1);
      assert.equal(replies.filter((r) => r.status === 409).length, 19);
      const charged = await h
        .db('wallet_transactions')
        .where({ kind: 'did_setup' })
        .whereIn(
          'account_id',
          tenants.map((t) => t.accountId),
        );
      assert.equal(charged.length, 1);
      await setRate(h.db, 'did_setup', 0);
    });

    it('100 concurrent originates with one Idempotency-Key place exactly one call', async () => {
      const t = await h.tenant('Idem', 100_000, '+254710800001');
      await h.db('accounts').where({ id: t.accountId }).update({ max_cps: 1000, max_concurrent_calls: 1000 });
      const before = h.engine.originated.length;
      const body = { to: '+254711000001', from: '+254710800001', url: 'https://i.test/v' };
      const replies = await Promise.all(
        Array.from({ length: 100 }, () =>
          h.req('POST', '/api/calls/originate', { key: t.key, body, headers: { 'idempotency-key': 'once' } }),
        ),
      );
      const created = replies.filter((r) => r.status === 201);
      const inFlight = replies.filter((r) => r.status === 409);
      assert.equal(created.length + inFlight.length, 100, JSON.stringify(replies.map((r) => r.status)));
      assert.ok(created.length >= 1);
      assert.equal(new Set(created.map((r) => r.body.uuid)).size, 1, 'every 201 is the same call, replayed');
      for (const r of inFlight) assert.equal(r.body.code, 'IDEMPOTENCY_IN_FLIGHT');
      assert.equal(
        await h
          .db('calls')
          .where({ account_id: t.accountId })
          .count({ n: '*' })
          .first()
          .then((x) => Number(x?.n)),
        1,
      );
      assert.equal(h.engine.originated.length - before, 1, 'dialled once');
      const replay = await h.req('POST', '/api/calls/originate', {
        key: t.key,
        body,
        headers: { 'idempotency-key': 'once' },
      });
      assert.equal(replay.status, 201);
      assert.equal(replay.text, created[0].text, 'verbatim');
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    });

    it('100 concurrent acquires with one Idempotency-Key charge once', async () => {
      const t = await h.tenant('IdemAcq', 10_000);
      await setRate(h.db, 'did_setup', 700);
      await addPoolNumbers(h.db, ['+254710700000']);
      const uuid = (await h.db('numbers').where({ number: '+254710700000' }).first()).id;
      const replies = await Promise.all(
        Array.from({ length: 100 }, () =>
          h.req('POST', '/api/numbers/acquire', { key: t.key, body: { uuid }, headers: { 'idempotency-key': 'acq' } }),
        ),
      );
      const ok = replies.filter((r) => r.status === 200);
      assert.equal(
        ok.length + replies.filter((r) => r.status === 409 && r.body.code === 'IDEMPOTENCY_IN_FLIGHT').length,
        100,
      );
      assert.ok(ok.length >= 1);
      assert.ok(
        ok.every((r) => r.text === ok[0].text),
        'replays are verbatim',
      );
      const acct = await getAccount(h.db, t.accountId);
      assert.equal(acct.balance_cents, 10_000 - 700, 'charged once');
      await setRate(h.db, 'did_setup', 0);
    });
  });
}
