import assert from 'node:assert/strict';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  IDEMPOTENCY_ABANDONED_MS,
  IDEMPOTENCY_WINDOW_MS,
  insertAccount,
  purgeIdempotencyKeys,
  type Db,
} from '../../store/index.js';
import { sqliteDb } from '../support/db.js';

describe('idempotency key store', function () {
  let db: Db;
  let account: string;
  before(async () => {
    db = await sqliteDb.open();
    account = (await insertAccount(db, 'Keys')).id;
  });
  after(async () => db?.destroy());

  it('claims once, reports in-flight, mismatch and replay, and forgets after 24 hours', async () => {
    const t0 = new Date('2026-01-01T00:00:00Z');
    assert.deepEqual(await claimIdempotencyKey(db, account, 'k', 'scope', 'h1', t0), { kind: 'claimed' });
    assert.deepEqual(await claimIdempotencyKey(db, account, 'k', 'scope', 'h1', t0), { kind: 'in_flight' });
    assert.deepEqual(await claimIdempotencyKey(db, account, 'k', 'scope', 'h2', t0), { kind: 'mismatch' });
    assert.deepEqual(await claimIdempotencyKey(db, account, 'k', 'other', 'h1', t0), { kind: 'mismatch' });
    await completeIdempotencyKey(db, account, 'k', 201, '{"a":1}');
    const later = new Date(t0.getTime() + IDEMPOTENCY_WINDOW_MS - 1000);
    assert.deepEqual(await claimIdempotencyKey(db, account, 'k', 'scope', 'h1', later), {
      kind: 'replay',
      status: 201,
      body: '{"a":1}',
    });
    const expired = new Date(t0.getTime() + IDEMPOTENCY_WINDOW_MS);
    assert.deepEqual(await claimIdempotencyKey(db, account, 'k', 'scope', 'h2', expired), { kind: 'claimed' });
  });

  it('an in-flight claim left by a dead process is taken over after the abandonment delay', async () => {
    const t0 = new Date('2026-02-01T00:00:00Z');
    await claimIdempotencyKey(db, account, 'dead', 's', 'h', t0);
    const soon = new Date(t0.getTime() + IDEMPOTENCY_ABANDONED_MS - 1);
    assert.equal((await claimIdempotencyKey(db, account, 'dead', 's', 'h', soon)).kind, 'in_flight');
    const late = new Date(t0.getTime() + IDEMPOTENCY_ABANDONED_MS);
    assert.equal((await claimIdempotencyKey(db, account, 'dead', 's', 'h', late)).kind, 'claimed');
  });

  it('purges expired keys', async () => {
    const n = await purgeIdempotencyKeys(db, new Date('2030-01-01T00:00:00Z'));
    assert.ok(n >= 2);
    assert.equal((await db('idempotency_keys').count({ n: '*' }).first())?.n, 0);
  });
});
