import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from '../../store/index.js';
import { inTransaction, insertAccount, lockAccountBalance } from '../../store/index.js';
import { post, settleCall } from '../../billing/index.js';
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
  it("a settlement holds the account's lock only while PostgreSQL runs it, not while the switch is busy", async () => {
    const a = await insertAccount(db, 'Settled');
    await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: 1000 });
    const callId = (await newCall(a.id)).id;
    // Another process (a worker thread with its own pg client and event loop) holds the account's lock, so the
    // settlement below is waiting for it; the worker lets go while this thread's event loop is blocked, then asks for
    // the lock itself (NOWAIT) for the next 800 ms.
    const worker = new Worker(LOCKER, {
      eval: true,
      workerData: { pg: createRequire(import.meta.url).resolve('pg'), url: db.client.config.connection, id: a.id },
    });
    const message = (): Promise<string> => new Promise((r) => worker.once('message', r));
    try {
      assert.equal(await message(), 'locked');
      const settled = settleCall(db, { accountId: a.id, callId, talkCents: 300, ttsCents: 0 });
      await new Promise((r) => setTimeout(r, 300)); // the settlement waits on the lock now
      const verdict = message();
      worker.postMessage('go');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500); // the switch's loop, busy for 1.5 s
      assert.equal((await settled).costCents, 300);
      // Before: the settlement got the lock, then waited for this thread to send its post and COMMIT (1.5 s).
      assert.equal(await verdict, 'free');
    } finally {
      await worker.terminate();
    }
    const rows = await db('wallet_transactions').where({ call_id: callId });
    assert.equal(rows.length, 1);
    assert.equal(Number((await db('accounts').where({ id: a.id }).first()).balance_cents), 700);
  });
});

/** The worker of the test above: locks the account, lets go on 'go', then tries for the lock with NOWAIT. */
const LOCKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { Client } = require(workerData.pg);
const sql = 'select 1 from "accounts" where "id" = $1 for no key update nowait';
(async () => {
  const holder = new Client(workerData.url);
  const prober = new Client(workerData.url);
  await holder.connect();
  await prober.connect();
  await holder.query('begin');
  await holder.query(sql, [workerData.id]);
  parentPort.postMessage('locked');
  await new Promise((r) => parentPort.once('message', r));
  await holder.query('commit');
  let verdict = 'held';
  for (const end = Date.now() + 800; Date.now() < end && verdict === 'held'; ) {
    await prober.query('begin');
    try {
      await prober.query(sql, [workerData.id]);
      verdict = 'free';
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
    await prober.query('rollback');
  }
  parentPort.postMessage(verdict);
  await holder.end();
  await prober.end();
})();
`;
