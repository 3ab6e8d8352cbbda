import assert from 'node:assert/strict';
import { StoreAdmission, AdmissionRefusedError } from '../../billing/admission.js';
import { post } from '../../billing/index.js';
import { putSetting, updateAccount, type CallRow } from '../../store/index.js';
import { NullCallEngine } from '../support/null-call-engine.js';
import { sqliteDb } from '../support/db.js';
import { ApiHarness, type Tenant } from './harness.js';
import { assertError } from './shapes.js';

/** A call engine whose originate waits until released, to hold a request in flight. */
class GatedEngine extends NullCallEngine {
  gate: Promise<void> = Promise.resolve();
  override async originate(call: CallRow, opts: { timeoutSeconds: number }): Promise<void> {
    await this.gate;
    return super.originate(call, opts);
  }
}

describe('api originate admission and idempotency rules', function () {
  this.timeout(30000);
  let h: ApiHarness;
  let engine: GatedEngine;
  const DID = '+254700000501';
  const body = { to: '+254711000001', from: DID, url: 'https://x.test/v' };
  const callsOf = async (t: Tenant) =>
    Number((await h.db('calls').where({ account_id: t.accountId }).count({ n: '*' }).first())?.n);

  before(async () => {
    const base = await sqliteDb.open();
    engine = new GatedEngine(base);
    h = await ApiHarness.start({ name: 'sqlite', open: async () => base }, { calls: engine });
    h.engine = engine;
  });
  after(async () => h?.stop());

  it('an empty wallet is a 402 BILL.0402; the call is neither written nor dialled', async () => {
    const t = await h.tenant('Broke', 0, '+254700000502');
    const before = engine.originated.length;
    const r = await h.req('POST', '/api/calls/originate', { key: t.key, body: { ...body, from: '+254700000502' } });
    assertError(r, 402, 'BILL.0402');
    assert.equal(await callsOf(t), 0);
    assert.equal(engine.originated.length, before);
  });

  it('draining is a 503 PLATFORM.0503 with Retry-After', async () => {
    const t = await h.tenant('Drain', 10_000, '+254700000503');
    await putSetting(h.db, 'draining', 'true');
    try {
      const r = await h.req('POST', '/api/calls/originate', { key: t.key, body: { ...body, from: '+254700000503' } });
      assertError(r, 503, 'PLATFORM.0503');
      assert.ok(Number(r.headers.get('retry-after')) > 0);
      assert.equal(await callsOf(t), 0);
    } finally {
      await putSetting(h.db, 'draining', 'false');
    }
  });

  it('the concurrency cap is a 429 LIMIT.0429 with { detail, code }', async () => {
    const t = await h.tenant('Conc', 10_000, '+254700000504');
    await updateAccount(h.db, t.accountId, { max_concurrent_calls: 2, max_cps: 100 });
    const b = { ...body, from: '+254700000504' };
    const replies = await Promise.all(
      [1, 2, 3, 4].map(() => h.req('POST', '/api/calls/originate', { key: t.key, body: b })),
    );
    assert.deepEqual(replies.map((r) => r.status).sort(), [201, 201, 429, 429]);
    for (const r of replies.filter((x) => x.status === 429)) {
      assertError(r, 429, 'LIMIT.0429');
      assert.match(r.body.detail, /simultaneous/);
    }
    assert.equal(await callsOf(t), 2, 'refused calls are not written');
    // Ending one frees a slot.
    const live = replies.find((r) => r.status === 201)!;
    await h.req('POST', '/api/calls/hangup', { key: t.key, body: { sid: live.body.sid } });
    assert.equal((await h.req('POST', '/api/calls/originate', { key: t.key, body: b })).status, 201);
  });

  it('the CPS cap is a 429 LIMIT.0430', async () => {
    const t = await h.tenant('Cps', 10_000, '+254700000505');
    await updateAccount(h.db, t.accountId, { max_concurrent_calls: 100, max_cps: 3 });
    const b = { ...body, from: '+254700000505' };
    const replies = await Promise.all(
      [1, 2, 3, 4, 5].map(() => h.req('POST', '/api/calls/originate', { key: t.key, body: b })),
    );
    assert.deepEqual(replies.map((r) => r.status).sort(), [201, 201, 201, 429, 429]);
    for (const r of replies.filter((x) => x.status === 429)) assertError(r, 429, 'LIMIT.0430');
  });

  it('live, twice the CPS cap for 10 s: no second of the switch admits more than the cap, the rest get 429 LIMIT.0430', async () => {
    const cap = 5;
    const t = await h.tenant('CpsLive', 10_000_000, '+254700000509');
    await updateAccount(h.db, t.accountId, { max_concurrent_calls: 1000, max_cps: cap });
    const b = { ...body, from: '+254700000509' };
    const started = Date.now();
    const sent: Array<Promise<{ at: number; status: number }>> = [];
    await new Promise<void>((resolve) => {
      const timer = setInterval(
        () => {
          const at = Date.now() - started;
          if (at >= 10_000) return void (clearInterval(timer), resolve());
          sent.push(
            h.req('POST', '/api/calls/originate', { key: t.key, body: b }).then((r) => ({ at, status: r.status })),
          );
        },
        1000 / (2 * cap),
      );
    });
    const results = await Promise.all(sent);
    assert.ok(results.length >= 9 * 2 * cap, `sent ${results.length}`);
    assert.ok(
      results.every((r) => r.status === 201 || r.status === 429),
      results.map((r) => r.status).join(),
    );
    // Judged by the switch's clock (each admitted call's row), not by when the test sent: a busy box may hold a
    // request back past the second it was sent in. Any 800 ms of the switch's holds at most the cap (the window is
    // 1 s; the rest is room for a row written a little after its admission).
    const admitted = (await h.db('calls').where({ account_id: t.accountId }).select('created_at'))
      .map((r: { created_at: string }) => Date.parse(r.created_at))
      .sort((x: number, y: number) => x - y);
    assert.equal(admitted.length, results.filter((r) => r.status === 201).length, 'a refused originate writes no call');
    const busiest = Math.max(
      ...admitted.map((from: number) => admitted.filter((x: number) => x >= from && x < from + 800).length),
    );
    assert.ok(busiest <= cap, `${busiest} calls admitted within 800 ms`);
    // Ten seconds at twice the cap: about ten seconds' worth admitted, never more than the window allows.
    assert.ok(
      admitted.length >= 7 * cap && admitted.length <= 11 * cap,
      `${admitted.length} admitted in 10 s at a cap of ${cap}/s`,
    );
  });

  it('a suspended account is refused with 403 BILL.0407 by admission', async () => {
    const t = await h.tenant('Susp', 10_000);
    await updateAccount(h.db, t.accountId, { status: 'suspended' });
    const adm = new StoreAdmission(h.db);
    let placed = false;
    await assert.rejects(
      adm.admit({ accountId: t.accountId }, async () => {
        placed = true;
      }),
      (e: unknown) => e instanceof AdmissionRefusedError && e.code === 'BILL.0407' && e.status === 403,
    );
    assert.equal(placed, false);
  });

  it('the CPS window slides with the injected clock', async () => {
    const t = await h.tenant('Clock', 10_000);
    await updateAccount(h.db, t.accountId, { max_cps: 2 });
    let now = 1_000_000;
    const adm = new StoreAdmission(h.db, { now: () => now });
    const place = async () => 'ok';
    await adm.admit({ accountId: t.accountId }, place);
    await adm.admit({ accountId: t.accountId }, place);
    await assert.rejects(adm.admit({ accountId: t.accountId }, place), /calls-per-second/);
    now += 1001;
    assert.equal(await adm.admit({ accountId: t.accountId }, place), 'ok');
  });

  describe('Idempotency-Key', () => {
    let t: Tenant;
    const idem = (key: string, b: unknown = { ...body, from: '+254700000506' }) =>
      h.req('POST', '/api/calls/originate', { key: t.key, body: b, headers: { 'idempotency-key': key } });
    before(async () => {
      t = await h.tenant('Idem', 0, '+254700000506');
      await updateAccount(h.db, t.accountId, { max_cps: 1000 });
    });

    it('rule 5: a 402 frees the key, so the corrected retry runs', async () => {
      assertError(await idem('k-402'), 402);
      await post(h.db, { accountId: t.accountId, direction: 'credit', kind: 'topup', amountCents: 10_000 });
      assert.equal((await idem('k-402')).status, 201);
    });

    it('rule 5: a validation error frees the key', async () => {
      assertError(await idem('k-400', { ...body, from: '+254700000506', to: 'bad' }), 400);
      assert.equal((await idem('k-400', { ...body, from: '+254700000506', to: '+254711000002' })).status, 201);
    });

    it('rule 5: a 429 frees the key', async () => {
      await updateAccount(h.db, t.accountId, { max_concurrent_calls: 0 });
      assertError(await idem('k-429'), 429, 'LIMIT.0429');
      await updateAccount(h.db, t.accountId, { max_concurrent_calls: 1000 });
      assert.equal((await idem('k-429')).status, 201);
    });

    it('rule 3: a duplicate while the first is in flight is a 409', async () => {
      let release!: () => void;
      engine.gate = new Promise<void>((r) => (release = r));
      const first = idem('k-409');
      await new Promise((r) => setTimeout(r, 200));
      assertError(await idem('k-409'), 409, 'IDEMPOTENCY_IN_FLIGHT');
      release();
      assert.equal((await first).status, 201);
      engine.gate = Promise.resolve();
    });

    it('rule 4: after completion a retry replays status and body verbatim without re-running', async () => {
      const first = await idem('k-replay');
      const n = await callsOf(t);
      const again = await idem('k-replay');
      assert.equal(again.status, first.status);
      assert.equal(again.text, first.text);
      assert.equal(await callsOf(t), n);
    });

    it('the same key with a different body is a 422', async () => {
      await idem('k-diff');
      assertError(
        await idem('k-diff', { ...body, from: '+254700000506', to: '+254711999999' }),
        422,
        'IDEMPOTENCY_KEY_REUSED',
      );
    });

    it('rule 2: a key older than 24 hours is forgotten', async () => {
      const first = await idem('k-old');
      await h
        .db('idempotency_keys')
        .where({ account_id: t.accountId, key: 'k-old' })
        .update({ expires_at: new Date(Date.now() - 1000).toISOString() });
      const second = await idem('k-old');
      assert.equal(second.status, 201);
      assert.notEqual(second.body.uuid, first.body.uuid);
    });

    it('rule 6: without the header there is no duplicate protection', async () => {
      const a = await h.req('POST', '/api/calls/originate', { key: t.key, body: { ...body, from: '+254700000506' } });
      const b = await h.req('POST', '/api/calls/originate', { key: t.key, body: { ...body, from: '+254700000506' } });
      assert.notEqual(a.body.uuid, b.body.uuid);
    });

    it('acquire: a 409 outcome is replayed, not re-run', async () => {
      const other = await h.tenant('Owner', 0, '+254700000507');
      void other;
      const uuid = (await h.db('numbers').where({ number: '+254700000507' }).first()).id;
      const r1 = await h.req('POST', '/api/numbers/acquire', {
        key: t.key,
        body: { uuid },
        headers: { 'idempotency-key': 'a1' },
      });
      assertError(r1, 409, 'NUMBER_TAKEN');
      const r2 = await h.req('POST', '/api/numbers/acquire', {
        key: t.key,
        body: { uuid },
        headers: { 'idempotency-key': 'a1' },
      });
      assert.equal(r2.text, r1.text);
      assert.equal(r2.headers.get('idempotent-replayed'), 'true');
    });
  });
});
