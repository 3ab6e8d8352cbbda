import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../store/index.js';
import { EventCodes } from '../../events/index.js';
import { Receiver, STORES, seedAccount, seedCall, waitFor } from './helpers.js';
import { eventsOn } from './setup.js';

/**
 * Issue 15, item 9: the auto-disable count belongs to the route (spec, States: "Webhook route (per purpose)"),
 * not to the URL. The account's status URL and a number's status override are set to one URL of a real receiver;
 * the receiver fails every callback of the number's call and accepts the rest. The number's route is disabled
 * after 5 exhausted deliveries, although the account's route succeeded between each of them, and the account's
 * route keeps delivering. Keyed by URL, each success reset the shared count and the route was never disabled.
 */
for (const store of STORES)
  describe(`events: status routes counted per route on ${store.name}`, function () {
    this.timeout(30000);
    let receiver: Receiver;
    const cleanups: Array<() => Promise<void>> = [];
    beforeEach(async () => {
      receiver = await new Receiver().start();
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
      await receiver.close();
    });

    const stateOf = async (db: Db, id: string) => (await db('event_outbox').where({ id }).first())?.state;

    it("failures on a number's override disable that route only; the account's route on the same URL keeps delivering", async () => {
      const { db } = await store.open();
      cleanups.push(() => db.destroy());
      const ev = eventsOn(db, { retryDelaysMs: [5, 5] });
      cleanups.push(() => ev.outbox.close());
      const url = receiver.url('/status');
      const accountId = await seedAccount(db, url);
      const numberId = randomUUID();
      await db('numbers').insert({
        id: numberId,
        number: `+25471${String(Date.now() % 1e7).padStart(7, '0')}`,
        account_id: accountId,
        is_active: true,
        webhook_status: url,
        created_at: new Date().toISOString(),
      });
      const call = await seedCall(db, accountId, { number_id: numberId, direction: 'inbound' });
      receiver.reply = (r) => (r.json?.sid === call.sid ? 500 : 200);

      for (let i = 0; i < 5; i++) {
        const failing = await ev.publisher.emit({ accountId, code: EventCodes.ttsGenerated, callId: call.id });
        assert.equal(failing.route, `status:number:${numberId}`);
        assert.equal(failing.url, url);
        await waitFor(async () => (await stateOf(db, failing.id)) === 'failed', 5000, `delivery ${i + 1} given up`);
        const fine = await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { i } });
        assert.equal(fine.route, 'status');
        assert.equal(fine.url, url, 'the same URL');
        await waitFor(async () => (await stateOf(db, fine.id)) === 'delivered', 5000, `account event ${i + 1}`);
      }
      await waitFor(() => ev.seen.some((e) => e.frame.data?.routeDisabled === true), 3000, 'the account is told');
      const notice = ev.seen.find((e) => e.frame.data?.routeDisabled === true)!;
      assert.equal(notice.frame.code, 'WH.0400');
      assert.equal(notice.frame.data?.route, `status:number:${numberId}`);
      assert.equal(notice.frame.data?.consecutiveFailures, 5);

      const routes = await db('webhook_routes').where({ account_id: accountId }).orderBy('route');
      assert.deepEqual(
        routes.map((r) => [r.route, r.url, Boolean(r.disabled), Number(r.consecutive_failures)]),
        [
          ['status', url, false, 0],
          [`status:number:${numberId}`, url, true, 5],
        ],
      );

      // The disabled route is not sent to; the account's route, on the same URL, still is.
      const sent = receiver.requests.length;
      const blocked = await ev.publisher.emit({ accountId, code: EventCodes.callCompleted, callId: call.id });
      assert.equal(blocked.delivery, 'route_disabled');
      const next = await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { i: 'after' } });
      assert.equal(next.delivery, 'queued');
      await waitFor(async () => (await stateOf(db, next.id)) === 'delivered', 5000, 'the account route delivers');
      assert.equal(receiver.requests.length, sent + 1, 'only the account route was requested');
      assert.equal(receiver.requests.at(-1)!.json.id, next.id);
    });
  });
