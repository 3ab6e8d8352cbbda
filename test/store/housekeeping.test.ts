import assert from 'node:assert/strict';
import {
  Housekeeping,
  Uuid7Generator,
  claimIdempotencyKey,
  insertAccount,
  insertOutboxRows,
  mintStreamToken,
  purgeIdempotencyKeys,
  sweepExpiredRows,
  type Db,
  type NewOutboxRow,
  type SweptRows,
} from '../../store/index.js';
import { DELETE_BATCH } from '../../store/fixed-sql.js';
import { BOTH_DBS } from '../support/db.js';

const DAY = 86_400_000;

for (const kind of BOTH_DBS) {
  describe(`store: housekeeping on ${kind.name}`, function () {
    this.timeout(60_000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    /** An outbox row made `ageDays` before `now` (its id of that moment, as the publisher makes them). */
    const callback = (now: number, ageDays: number, state: NewOutboxRow['state'], accountId: string): NewOutboxRow => {
      const at = new Date(now - ageDays * DAY).toISOString();
      return {
        id: new Uuid7Generator(() => now - ageDays * DAY).next(),
        account_id: accountId,
        call_id: 'c1',
        event: 'call.completed',
        route: 'status',
        url: 'https://s.example/',
        body: '{}',
        attempts: 1,
        state,
        last_error: null,
        next_attempt_at: at,
        leased_by: null,
        created_at: at,
        done_at: state === 'pending' ? null : at,
      };
    };

    it('deletes finished callbacks past the retention, expired keys and tokens, in batches; keeps the rest', async () => {
      const now = Date.now();
      const a = await insertAccount(db, 'Sweep');
      const old = [
        callback(now, 40, 'delivered', a.id),
        callback(now, 35, 'failed', a.id),
        callback(now, 45, 'pending', a.id), // a retry still due: never swept
      ];
      const recent = callback(now, 2, 'delivered', a.id);
      await insertOutboxRows(db, [...old, recent]);
      // More expired keys than one batch deletes, so the sweep takes several statements.
      const expired = DELETE_BATCH + 7;
      const then = new Date(now - 2 * DAY);
      for (let i = 0; i < expired; i += 500) {
        const rows = Array.from({ length: Math.min(500, expired - i) }, (_, j) => ({
          account_id: a.id,
          key: `k${i + j}`,
          scope: 'originate',
          request_hash: 'h',
          state: 'done',
          status_code: 201,
          response_body: '{}',
          created_at: then.toISOString(),
          expires_at: new Date(now - DAY).toISOString(),
        }));
        await db('idempotency_keys').insert(rows);
      }
      await claimIdempotencyKey(db, a.id, 'live', 'originate', 'h', new Date(now));
      await mintStreamToken(db, a.id, 60, false, new Date(now - DAY));
      await mintStreamToken(db, a.id, 3600, false, new Date(now));

      const swept = await sweepExpiredRows(db, new Date(now), 30);
      assert.deepEqual(swept, { callbacks: 2, idempotencyKeys: expired, streamTokens: 1 });
      assert.deepEqual(
        (await db('event_outbox').where({ account_id: a.id }).orderBy('id').select('id')).map((r) => r.id),
        [old[2]!.id, recent.id].sort(),
        'the pending row and the recent one stay',
      );
      assert.deepEqual(
        (await db('idempotency_keys').where({ account_id: a.id }).select('key')).map((r) => r.key),
        ['live'],
      );
      assert.equal((await db('stream_tokens').where({ account_id: a.id })).length, 1);
      assert.deepEqual(await sweepExpiredRows(db, new Date(now), 30), {
        callbacks: 0,
        idempotencyKeys: 0,
        streamTokens: 0,
      });
    });

    it('a sweep told to stop ends after the batch in hand', async () => {
      const now = Date.now();
      const a = await insertAccount(db, 'Stop');
      const rows = Array.from({ length: DELETE_BATCH + 5 }, (_, i) => ({
        account_id: a.id,
        key: `s${i}`,
        scope: 'originate',
        request_hash: 'h',
        state: 'done',
        status_code: 201,
        response_body: '{}',
        created_at: new Date(now - 2 * DAY).toISOString(),
        expires_at: new Date(now - DAY).toISOString(),
      }));
      for (let i = 0; i < rows.length; i += 500) await db('idempotency_keys').insert(rows.slice(i, i + 500));
      const stop = new AbortController();
      stop.abort();
      assert.equal(await purgeIdempotencyKeys(db, new Date(now), stop.signal), DELETE_BATCH);
      assert.equal((await db('idempotency_keys').where({ account_id: a.id })).length, 5);
    });

    it('the switch runs a sweep at start, then each interval, and reports what it deleted', async () => {
      const now = Date.now();
      const a = await insertAccount(db, 'Timer');
      await insertOutboxRows(db, [callback(now, 10, 'delivered', a.id)]);
      const reports: SweptRows[] = [];
      const errors: unknown[] = [];
      const h = new Housekeeping({
        db,
        callbackRetentionDays: 7,
        onSwept: (r) => reports.push(r),
        onError: (e) => errors.push(e),
        intervalMs: 60_000,
      }).start();
      for (let i = 0; i < 100 && reports.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      await h.close();
      assert.deepEqual(errors, []);
      assert.equal(reports.length, 1, 'one sweep, then the hour');
      assert.equal(reports[0]!.callbacks, 1);
      assert.equal((await db('event_outbox').where({ account_id: a.id })).length, 0);
    });
  });
}
