import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  ACCOUNT_STATUS_ROUTE,
  disableWebhookRoute,
  enableWebhookRoute,
  findWebhookRoute,
  inTransaction,
  insertAccount,
  listWebhookRoutes,
  migrate,
  noteRouteDelivered,
  noteRouteFailed,
  numberStatusRoute,
  type Db,
} from '../../store/index.js';
import { migrationSource } from '../../store/migrations/index.js';
import { BOTH_DBS } from '../support/db.js';

/**
 * Status-route health is kept per route (issue 15, item 9): the account's status route and a number's status
 * override set to the same URL count failures and are disabled apart. Before, one row per (account, URL) held both.
 */
for (const kind of BOTH_DBS) {
  describe(`store: webhook routes keyed by route on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    const T0 = '2024-01-01T00:00:00.000Z';
    const URL = 'https://hooks.example/status';

    it('two routes on one URL: failures and the disabled flag of one leave the other alone', async () => {
      const a = await insertAccount(db, 'Shared URL');
      const acct = { route: ACCOUNT_STATUS_ROUTE, url: URL };
      const num = { route: numberStatusRoute(randomUUID()), url: URL };
      for (let i = 0; i < 5; i++) await inTransaction(db, (tx) => noteRouteFailed(tx, a.id, num, T0));
      await noteRouteDelivered(db, a.id, acct, T0); // a success on the account's route resets only that route
      assert.equal((await findWebhookRoute(db, a.id, num))?.consecutive_failures, 5);
      await disableWebhookRoute(db, a.id, num, T0);
      assert.equal((await findWebhookRoute(db, a.id, num))?.disabled, true);
      const other = await findWebhookRoute(db, a.id, acct);
      assert.deepEqual([other?.disabled, other?.consecutive_failures], [false, 0]);
      assert.deepEqual(
        (await listWebhookRoutes(db, a.id)).map((r) => [r.route, r.url, r.disabled]),
        [
          [ACCOUNT_STATUS_ROUTE, URL, false],
          [num.route, URL, true],
        ],
      );
      // Re-enabling names the route: the account's route (not disabled) is found but the number's stays off.
      assert.equal(await enableWebhookRoute(db, a.id, acct, T0), true);
      assert.equal((await findWebhookRoute(db, a.id, num))?.disabled, true);
      assert.equal(await enableWebhookRoute(db, a.id, { route: 'status:number:none', url: URL }, T0), false);
      assert.equal(await enableWebhookRoute(db, a.id, num, T0), true);
      assert.equal((await findWebhookRoute(db, a.id, num))?.disabled, false);
    });

    it('migration 014: each route keeps the state its URL had; pending outbox rows get their route', async () => {
      // Back to the schema before the route key, rows as the old code wrote them, then forward again.
      // Later migrations are undone first, then 014 itself.
      for (;;) {
        const [done] = (await db.migrate.list({ migrationSource })) as [Array<{ name: string }>, unknown];
        if (!done.some((m) => m.name === '014-webhook-route-key')) break;
        await db.migrate.down({ migrationSource });
      }
      // Written as rows of that schema (insertAccount writes columns of later migrations).
      const a = { id: randomUUID() };
      await db('accounts').insert({
        id: a.id,
        name: 'Before 014',
        status: 'active',
        balance_cents: 0,
        signing_secret: 'whsec_before014',
        created_at: T0,
      });
      await db('accounts').where({ id: a.id }).update({ webhook_status: URL });
      const numberId = randomUUID();
      const otherNumber = randomUUID();
      await db('numbers').insert([
        { id: numberId, number: `+2547${Date.now() % 1e8}`, account_id: a.id, webhook_status: URL, created_at: T0 },
        { id: otherNumber, number: `+2548${Date.now() % 1e8}`, account_id: a.id, webhook_status: '', created_at: T0 },
      ]);
      const callId = randomUUID();
      await db('calls').insert({
        id: callId,
        sid: `call_${callId.replace(/-/g, '').slice(0, 24)}`,
        account_id: a.id,
        number_id: numberId,
        direction: 'inbound',
        from_number: '+254700000001',
        to_number: '+254700000002',
        status: 'answered',
        started_at: T0,
        created_at: T0,
      });
      await db('webhook_routes').insert({
        account_id: a.id,
        url: URL,
        consecutive_failures: 5,
        disabled: true,
        disabled_at: T0,
        updated_at: T0,
      });
      const outboxRow = (id: string, call: string | null) => ({
        id,
        account_id: a.id,
        call_id: call,
        event: 'call.answered',
        url: URL,
        body: '{}',
        attempts: 0,
        state: 'pending',
        next_attempt_at: T0,
        created_at: T0,
      });
      await db('event_outbox').insert([outboxRow('m1', callId), outboxRow('m2', null)]);

      await migrate(db);
      const routes = (await listWebhookRoutes(db, a.id)).map((r) => [r.route, r.url, r.disabled]);
      assert.deepEqual(routes, [
        [ACCOUNT_STATUS_ROUTE, URL, true],
        [numberStatusRoute(numberId), URL, true],
      ]);
      const outbox = await db('event_outbox').whereIn('id', ['m1', 'm2']).orderBy('id').select('id', 'route');
      assert.deepEqual(
        outbox.map((r) => [r.id, r.route]),
        [
          ['m1', numberStatusRoute(numberId)],
          ['m2', ACCOUNT_STATUS_ROUTE],
        ],
      );
    });
  });
}
