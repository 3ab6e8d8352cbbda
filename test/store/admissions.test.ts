import assert from 'node:assert/strict';
import os from 'node:os';
import {
  admitInStore,
  insertAccount,
  insertCall,
  migrate,
  openDb,
  settleAdmission,
  updateCall,
  type Db,
  type StoreAdmissionAsk,
} from '../../store/index.js';
import { post } from '../../billing/index.js';
import { newPostgresDatabase } from '../support/db.js';

/**
 * The store's admission statement (PostgreSQL, simu_admit): the balance against a first block for each live call,
 * each admission not yet settled and the new call; the concurrency cap over the same count; the calls-per-second
 * window over the last second's admissions; concurrent statements from separate pools (nodes) decided one at a time.
 */
describe('admission decided by the store, on postgres', function () {
  this.timeout(60000);
  let db: Db;
  let url: string;
  before(async () => {
    url = await newPostgresDatabase();
    db = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
    await migrate(db);
  });
  after(async () => db?.destroy());

  const ask = (accountId: string, o: Partial<StoreAdmissionAsk> = {}): StoreAdmissionAsk => ({
    accountId,
    nodeId: 'node-1',
    maxConcurrent: 1000,
    maxCps: 1000,
    minimumCents: 100,
    staleMs: 10_000,
    ...o,
  });
  const call = (accountId: string) =>
    insertCall(db, { account_id: accountId, direction: 'outbound', from_number: '+254700000001', to_number: '+2547' });

  it('counts unsettled admissions with the live calls, and a settled one through its call alone', async () => {
    const a = (await insertAccount(db, 'Store A')).id;
    await post(db, { accountId: a, direction: 'credit', kind: 'topup', amountCents: 300 });
    const first = await admitInStore(db, ask(a));
    assert.equal(first.verdict, 'ok');
    assert.deepEqual([first.live, first.placing, first.balanceCents], [0, 0, 300]);
    const c1 = await call(a);
    const second = await admitInStore(db, ask(a));
    assert.deepEqual([second.verdict, second.live, second.placing], ['ok', 1, 1], 'written, not settled: twice');
    await settleAdmission(db, first.admissionId!);
    await settleAdmission(db, second.admissionId!);
    await call(a);
    const third = await admitInStore(db, ask(a));
    assert.deepEqual([third.verdict, third.live, third.placing], ['ok', 2, 0]);
    const fourth = await admitInStore(db, ask(a));
    assert.deepEqual([fourth.verdict, fourth.live, fourth.placing], ['balance', 2, 1], '3 blocks held, 300 left');
    await settleAdmission(db, third.admissionId!);
    await updateCall(db, c1.id, { status: 'completed', ended_at: new Date().toISOString() });
    assert.equal((await admitInStore(db, ask(a))).verdict, 'ok', 'an ended call frees its block');
  });

  it('admissions settled together are settled by one statement', async () => {
    const a = (await insertAccount(db, 'Store settle')).id;
    await post(db, { accountId: a, direction: 'credit', kind: 'topup', amountCents: 100_000 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await admitInStore(db, ask(a))).admissionId!);
    let statements = 0;
    const count = (q: { sql: string }) => {
      if (/call_admissions/.test(q.sql)) statements++;
    };
    db.on('query', count);
    try {
      await Promise.all(ids.map((id) => settleAdmission(db, id)));
    } finally {
      db.off('query', count);
    }
    assert.equal(statements, 1);
    const next = await admitInStore(db, ask(a));
    assert.deepEqual([next.verdict, next.placing], ['ok', 0], 'all five settled');
  });

  it('refuses over the concurrency cap, then over the calls-per-second window, and forgets stale admissions', async () => {
    const a = (await insertAccount(db, 'Store B')).id;
    await post(db, { accountId: a, direction: 'credit', kind: 'topup', amountCents: 1_000_000 });
    assert.equal((await admitInStore(db, ask(a, { maxConcurrent: 2 }))).verdict, 'ok');
    assert.equal((await admitInStore(db, ask(a, { maxConcurrent: 2 }))).verdict, 'ok');
    const capped = await admitInStore(db, ask(a, { maxConcurrent: 2 }));
    assert.deepEqual([capped.verdict, capped.placing], ['cap', 2]);
    const cps = await admitInStore(db, ask(a, { maxCps: 2 }));
    assert.deepEqual([cps.verdict, cps.recent], ['cps', 2]);
    // Unsettled admissions older than the stale horizon (their node died placing them) no longer count.
    await db('call_admissions')
      .where({ account_id: a })
      .update({ admitted_at: db.raw("now() - interval '20 s'") });
    const after = await admitInStore(db, ask(a, { maxConcurrent: 2, maxCps: 2 }));
    assert.deepEqual([after.verdict, after.placing, after.recent], ['ok', 0, 0]);
    assert.equal((await db('call_admissions').where({ account_id: a })).length, 1, 'the stale rows were deleted');
    assert.equal((await admitInStore(db, ask('00000000-0000-7000-8000-000000000000'))).verdict, 'missing');
  });

  it('three pools (nodes) admitting 60 calls at once against three first blocks admit exactly 3', async () => {
    const a = (await insertAccount(db, 'Store C')).id;
    await post(db, { accountId: a, direction: 'credit', kind: 'topup', amountCents: 300 });
    const pools = [
      db,
      openDb({ databaseUrl: url, dataDir: os.tmpdir() }),
      openDb({ databaseUrl: url, dataDir: os.tmpdir() }),
    ];
    try {
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => admitInStore(pools[i % 3]!, ask(a, { nodeId: `node-${i % 3}` }))),
      );
      assert.equal(answers.filter((r) => r.verdict === 'ok').length, 3);
      assert.equal(answers.filter((r) => r.verdict === 'balance').length, 57);
    } finally {
      for (const p of pools.slice(1)) await p.destroy();
    }
  });
});
