import assert from 'node:assert/strict';
import { claimGoneNodes, listCallEvents, writeNodeHeartbeat, type Db } from '../../store/index.js';
import { EventBus, EventCodes, EventPublisher, type EmittedEvent } from '../../events/index.js';
import { Receiver, STORES, seedAccount, seedCall, sleep, waitFor, type ReceivedRequest } from './helpers.js';
import { eventsOn, quiet } from './setup.js';

/**
 * Per call, a request for an event may only be made once every earlier event of that call has been answered with
 * a 2xx (or given up on, which none of these tests does).
 */
function assertOrderPerCall(requests: ReceivedRequest[], emittedByCall: Map<string, string[]>): void {
  const ok = new Set<string>();
  for (const r of requests) {
    const sid = r.json.sid as string | undefined;
    const order = sid ? emittedByCall.get(sid) : undefined;
    if (order) {
      const k = order.indexOf(r.json.id);
      assert.ok(k >= 0, 'a known event');
      for (const earlier of order.slice(0, k)) {
        assert.ok(ok.has(earlier), `event ${k} of ${sid} sent before event ${order.indexOf(earlier)} was delivered`);
      }
    }
    if (r.status >= 200 && r.status < 300) ok.add(r.json.id);
  }
}

async function allDelivered(db: Db): Promise<boolean> {
  return (await db('event_outbox').select('state')).every((r) => r.state === 'delivered');
}

const CALL_CODES = [
  EventCodes.callInitiated,
  EventCodes.callRinging,
  EventCodes.callAnswered,
  EventCodes.ttsGenerated,
  EventCodes.callCompleted,
];

/** A row for `id` in the nodes table whose heartbeat stopped a minute ago. */
async function silentNode(db: Db, id: string): Promise<void> {
  const then = new Date(Date.now() - 60_000).toISOString();
  await writeNodeHeartbeat(db, {
    id,
    state: 'up',
    version: 'test',
    sip_address: '127.0.0.1:5060',
    http_address: '127.0.0.1:8080',
    pid: 1,
    live_calls: 0,
    started_at: then,
    heartbeat_at: then,
  });
}

/** `survivor` declares every silent node gone, as its heartbeat's look does (billing/node-watch.ts). */
async function declareGone(db: Db, survivor: string): Promise<string[]> {
  const now = new Date().toISOString();
  return claimGoneNodes(db, survivor, now, now);
}

for (const store of STORES)
  describe(`events: status-callback outbox on ${store.name}`, function () {
    this.timeout(20000);
    let receiver: Receiver;
    const cleanups: Array<() => Promise<void>> = [];

    beforeEach(async () => {
      receiver = await new Receiver().start();
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
      await receiver.close();
    });

    async function open() {
      const f = await store.open();
      cleanups.push(() => f.db.destroy());
      return f;
    }
    function start(db: Db, opts: Parameters<typeof eventsOn>[1] = {}) {
      const ev = eventsOn(db, opts);
      cleanups.push(() => ev.outbox.close());
      return ev;
    }

    it('a receiver that is down, then up, gets every event; duplicates carry the same id and bytes; order per call', async () => {
      const { db } = await open();
      // ~5 s of retries in all: slack for a loaded CI box, so no event is given up on while the receiver is down.
      const ev = start(db, { retryDelaysMs: [20, 40, 80, 160, 320, 640, 1280, 2560] });
      const accountId = await seedAccount(db, receiver.url('/status'));
      let up = false;
      receiver.reply = () => (up ? 200 : 503);

      const byCall = new Map<string, string[]>();
      const emitted: EmittedEvent[] = [];
      const calls = await Promise.all([1, 2, 3].map(() => seedCall(db, accountId)));
      for (const code of CALL_CODES) {
        for (const c of calls) {
          const e = await ev.publisher.emit({ accountId, code, callId: c.id });
          emitted.push(e);
          byCall.set(c.sid, [...(byCall.get(c.sid) ?? []), e.id]);
        }
      }
      emitted.push(await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { remaining: '3.00' } }));
      assert.ok(emitted.every((e) => e.delivery === 'queued'));

      await sleep(300);
      assert.ok(receiver.requests.length >= 3, 'attempts were made while the receiver was down');
      assert.equal(receiver.delivered().length, 0);
      up = true;
      await waitFor(() => receiver.delivered().length === emitted.length, 10000, 'every event delivered');

      assert.deepEqual(new Set(receiver.delivered().map((r) => r.json.id)), new Set(emitted.map((e) => e.id)));
      const bodies = new Map<string, Buffer>();
      let duplicates = 0;
      for (const r of receiver.requests) {
        const prev = bodies.get(r.json.id);
        if (prev) {
          duplicates++;
          assert.deepEqual(r.raw, prev, 'a retry sends the same bytes');
        } else bodies.set(r.json.id, r.raw);
      }
      assert.ok(duplicates > 0, 'there were retries');
      assertOrderPerCall(receiver.requests, byCall);
      assert.ok(
        receiver.requests.every((r) => !String(r.json.event).startsWith('webhook.')),
        'WH.* never sent',
      );

      // The receiver answers before the outbox records the success: wait for the rows.
      await waitFor(() => allDelivered(db), 3000, 'every row delivered');
      // WH.0200 per delivery: on the bus, and among its call's events from the delivered row (the row is its
      // record: no call event is stored for it), with the delivered event's id, attempts and status.
      await waitFor(() => ev.seen.filter((e) => e.frame.code === 'WH.0200').length === emitted.length, 3000, 'WH.0200');
      assert.equal((await db('call_events').where({ code: 'WH.0200' })).length, 0, 'no call event stored');
      for (const c of calls) {
        const listed = (await listCallEvents(db, accountId, c.id)).filter((e) => e.code === 'WH.0200');
        const data = listed.map((e) => JSON.parse(e.data));
        assert.deepEqual(new Set(data.map((d) => d.eventId)), new Set(byCall.get(c.sid)));
        assert.ok(
          data.every((d) => d.status === 200 && d.attempts >= 1 && d.route === 'status'),
          JSON.stringify(data[0]),
        );
      }
      const seenData = ev.seen
        .filter((e) => e.frame.code === 'WH.0200')
        .map((e) => e.frame.data as { eventId: string });
      assert.deepEqual(new Set(seenData.map((d) => d.eventId)), new Set(emitted.map((e) => e.id)));
    });

    it("one call's callbacks reuse one kept-alive connection: the ignored reply body is drained, not cut", async () => {
      const { db } = await open();
      const ev = start(db);
      const accountId = await seedAccount(db, receiver.url('/status'));
      const call = await seedCall(db, accountId);
      for (const code of CALL_CODES) await ev.publisher.emit({ accountId, code, callId: call.id });
      await waitFor(() => receiver.delivered().length === CALL_CODES.length, 5000, 'every callback delivered');
      // Cancelling the reply's web stream (before) closed the connection: five callbacks, five connections.
      assert.equal(receiver.connections, 1, `${receiver.connections} connections for ${CALL_CODES.length} callbacks`);
    });

    it("this process's callbacks go from memory: with the poll a minute apart, a call's events and their retries are delivered in order", async () => {
      const { db } = await open();
      const ev = start(db, { pollIntervalMs: 60_000, retryDelaysMs: [30, 30, 30] });
      const accountId = await seedAccount(db, receiver.url('/status'));
      const call = await seedCall(db, accountId);
      await sleep(50); // the first poll (at start) is over
      let failFirst = true;
      receiver.reply = () => {
        if (!failFirst) return 200;
        failFirst = false;
        return 503;
      };
      const reads: string[] = [];
      const onQuery = (q: { sql: string }) => {
        if (/^select .*from "event_outbox"/i.test(q.sql)) reads.push(q.sql);
      };
      db.on('query', onQuery);
      const ids: string[] = [];
      for (const code of CALL_CODES) ids.push((await ev.publisher.emit({ accountId, code, callId: call.id })).id);
      await waitFor(() => receiver.delivered().length === ids.length, 5000, 'every callback delivered');
      db.off('query', onQuery);
      assert.deepEqual(
        receiver.requests.map((r) => r.json.id),
        [ids[0], ...ids],
        'the first event twice (503, then its retry), then the others in order',
      );
      // The call's first row checks that no earlier row of the call is pending elsewhere; the rest read nothing.
      assert.deepEqual(
        reads.map((q) => q.slice(0, 45)),
        ['select "id" from "event_outbox" where "id" in'],
        'no read of the table for rows this process queued but the order check of its call',
      );
    });

    it('callbacks queued together are sent under the lease they were queued with: a few reads check their order, a few statements mark them', async () => {
      const { db } = await open();
      const ev = start(db, { pollIntervalMs: 60_000, maxInFlight: 64, maxInFlightPerAccount: 64 });
      const accountId = await seedAccount(db, receiver.url('/status'));
      const calls = await Promise.all(Array.from({ length: 40 }, () => seedCall(db, accountId)));
      // One delivery first: the route's health row exists from then on (the first success writes it with the mark).
      await ev.publisher.emit({ accountId, code: EventCodes.walletLow });
      await waitFor(() => allDelivered(db), 3000, 'the first callback delivered');
      const leases: string[] = [];
      const orderChecks: string[] = [];
      const marks: string[] = [];
      const onQuery = (q: { sql: string }) => {
        if (/^update "event_outbox" set "next_attempt_at"/i.test(q.sql)) leases.push(q.sql);
        if (/^select "id" from "event_outbox" where "id" in/i.test(q.sql)) orderChecks.push(q.sql);
        if (/^update "event_outbox" set "state"/i.test(q.sql)) marks.push(q.sql);
      };
      // The receiver answers the 40 together once all have arrived, so their attempts end within a few turns.
      let release!: () => void;
      const together = new Promise<void>((r) => (release = r));
      let arrived = 0;
      receiver.reply = async () => {
        if (++arrived === calls.length) release();
        await together;
        return 200;
      };
      db.on('query', onQuery);
      await Promise.all(
        calls.map((c) => ev.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: c.id })),
      );
      await waitFor(() => receiver.delivered().length === calls.length + 1, 5000, 'every callback delivered');
      await waitFor(() => allDelivered(db), 3000, 'every row marked delivered');
      db.off('query', onQuery);
      assert.equal(leases.length, 0, `${leases.length} lease statements for ${calls.length} callbacks`);
      assert.ok(orderChecks.length <= 8, `${orderChecks.length} order checks for ${calls.length} callbacks`);
      assert.ok(marks.length <= 8, `${marks.length} delivered marks for ${calls.length} callbacks`);
      const rows = await db('event_outbox')
        .whereIn(
          'call_id',
          calls.map((c) => c.id),
        )
        .select('leased_by');
      assert.ok(
        rows.every((r) => r.leased_by === rows[0].leased_by && r.leased_by),
        'queued leased to this outbox',
      );
    });

    it("a node starting again ends its earlier process's leases: what that process queued is sent at once, in order", async () => {
      const { db } = await open();
      const accountId = await seedAccount(db, receiver.url('/status'));
      const call = await seedCall(db, accountId);
      // A process of node-a queued a call's events leased to itself for ten minutes, then died before sending them.
      const dead = new EventPublisher({ db, bus: new EventBus(quiet) });
      const until = new Date(Date.now() + 600_000).toISOString();
      dead.attachOutbox({ offer: () => undefined, leaseForQueued: () => ({ node: 'node-a', until }) });
      const ids: string[] = [];
      for (const code of CALL_CODES) ids.push((await dead.emit({ accountId, code, callId: call.id })).id);
      start(db, { nodeId: 'node-b' });
      await sleep(300);
      assert.equal(receiver.requests.length, 0, "another node does not take node-a's leased rows");
      start(db, { nodeId: 'node-a', pollIntervalMs: 60_000 });
      await waitFor(() => receiver.delivered().length === ids.length, 5000, 'delivered once node-a started again');
      assert.deepEqual(
        receiver.requests.map((r) => r.json.id),
        ids,
      );
    });

    it('an orderly stop ends the leases of the rows it queued and did not attempt: another node sends them at once', async () => {
      const { db } = await open();
      const accountId = await seedAccount(db, receiver.url('/status'));
      const call = await seedCall(db, accountId);
      const a = start(db, { nodeId: 'node-a', pollIntervalMs: 60_000, attemptTimeoutMs: 300 });
      await sleep(50); // its first poll is over: it queues rows leased to itself
      let hang = true;
      let arrived = 0;
      receiver.reply = async () => {
        arrived++;
        if (hang) await sleep(1000); // longer than the attempt's timeout: the first attempt fails
        return 200;
      };
      const ids: string[] = [];
      for (const code of CALL_CODES) ids.push((await a.publisher.emit({ accountId, code, callId: call.id })).id);
      await waitFor(() => arrived > 0, 3000, 'the first attempt under way');
      await a.outbox.close();
      hang = false;
      start(db, { nodeId: 'node-b' });
      // The rows behind the first were leased to node-a for seconds more; its stop ended those leases.
      await waitFor(() => receiver.delivered().length === ids.length, 3000, 'all sent by node-b');
      assert.deepEqual(
        receiver.delivered().map((r) => r.json.id),
        ids,
      );
    });

    it('a node declared gone: its leased callbacks go out from a survivor at once, in order', async () => {
      const { db } = await open();
      const accountId = await seedAccount(db, receiver.url('/status'));
      const call = await seedCall(db, accountId);
      // A process of node-a queued a call's events leased to itself for ten minutes, then its node went silent.
      const dead = new EventPublisher({ db, bus: new EventBus(quiet) });
      const until = new Date(Date.now() + 600_000).toISOString();
      dead.attachOutbox({ offer: () => undefined, leaseForQueued: () => ({ node: 'node-a', until }) });
      const ids: string[] = [];
      for (const code of CALL_CODES) ids.push((await dead.emit({ accountId, code, callId: call.id })).id);
      await silentNode(db, 'node-a');
      start(db, { nodeId: 'node-b' });
      await sleep(300);
      assert.equal(receiver.requests.length, 0, "node-a's leases hold while it is not declared gone");
      assert.deepEqual(await declareGone(db, 'node-b'), ['node-a']);
      await waitFor(() => receiver.delivered().length === ids.length, 3000, 'sent by node-b once node-a is gone');
      assert.deepEqual(
        receiver.requests.map((r) => r.json.id),
        ids,
      );
    });

    it('a node declared gone while it stalled does not send what its ended leases covered: a survivor sends it once', async () => {
      const { db } = await open();
      const accountId = await seedAccount(db, receiver.url('/status'));
      const slow = await seedCall(db, accountId);
      const call = await seedCall(db, accountId);
      let slowArrived = false;
      let slowDone = false;
      receiver.reply = async (r) => {
        if (r.json.sid !== slow.sid) return 200;
        slowArrived = true;
        await sleep(2500);
        slowDone = true;
        return 200;
      };
      // node-a holds one attempt at a time: the call's callbacks wait in its memory under the lease they were queued
      // with while the slow call's attempt takes its only slot.
      const a = start(db, { nodeId: 'node-a', pollIntervalMs: 60_000, maxInFlight: 1, attemptTimeoutMs: 5000 });
      await sleep(50); // its first poll is over: it queues rows leased to itself
      await a.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: slow.id });
      await waitFor(() => slowArrived, 3000, "the slow call's attempt under way");
      const ids: string[] = [];
      for (const code of CALL_CODES) ids.push((await a.publisher.emit({ accountId, code, callId: call.id })).id);
      await silentNode(db, 'node-a');
      assert.deepEqual(await declareGone(db, 'node-b'), ['node-a']);
      start(db, { nodeId: 'node-b' });
      const ofCall = () => receiver.requests.filter((r) => r.json.sid === call.sid);
      await waitFor(() => ofCall().length === ids.length, 2000, "node-b sends the call's callbacks at once");
      assert.equal(slowDone, false, "before node-a's slot is free");
      await waitFor(() => slowDone, 3000, "node-a's slow attempt over");
      await sleep(500);
      assert.deepEqual(
        ofCall().map((r) => r.json.id),
        ids,
        'each sent once, in order: node-a, its leases ended, does not send them again',
      );
    });

    it('a row whose call has an earlier row pending elsewhere waits for it (the lease checks order per call)', async () => {
      const f = await open();
      const accountId = await seedAccount(f.db, receiver.url('/status'));
      const call = await seedCall(f.db, accountId);
      // Another node queued the call's first event and has not sent it (its outbox stopped before the attempt).
      const other = eventsOn(f.db, { pollIntervalMs: 60_000 });
      await other.outbox.close();
      const ev = start(f.db, { pollIntervalMs: 60_000 });
      await sleep(50); // its first poll is over before the row is there
      const first = await other.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: call.id });
      const second = await ev.publisher.emit({ accountId, code: EventCodes.callRinging, callId: call.id });
      await sleep(300);
      assert.equal(receiver.requests.length, 0, 'the later event is not sent before the earlier one');
      // A node that polls takes both, in order.
      start(f.db);
      await waitFor(() => receiver.delivered().length === 2, 5000, 'both delivered');
      assert.deepEqual(
        receiver.requests.map((r) => r.json.id),
        [first.id, second.id],
      );
    });

    it('an outbox restarted in the middle of retries loses nothing and keeps counting attempts', async () => {
      const f = await open();
      const first = eventsOn(f.db, { retryDelaysMs: [50, 100, 200, 400, 800, 1600, 3200] });
      const accountId = await seedAccount(f.db, receiver.url('/status'));
      receiver.reply = () => 503;
      const byCall = new Map<string, string[]>();
      const ids: string[] = [];
      for (const _ of [1, 2]) {
        const c = await seedCall(f.db, accountId);
        for (const code of CALL_CODES) {
          const e = await first.publisher.emit({ accountId, code, callId: c.id });
          ids.push(e.id);
          byCall.set(c.sid, [...(byCall.get(c.sid) ?? []), e.id]);
        }
      }
      await waitFor(
        async () => Number((await f.db('event_outbox').max('attempts as m').first())?.m) >= 2,
        5000,
        'retries under way',
      );
      await first.outbox.close();
      await f.db.destroy();
      const before = receiver.requests.length;

      const db2 = await f.reopen();
      cleanups.push(() => db2.destroy());
      const attemptsAtRestart = new Map(
        (await db2('event_outbox').select('id', 'attempts')).map((r) => [r.id as string, Number(r.attempts)]),
      );
      assert.ok([...attemptsAtRestart.values()].some((a) => a >= 2));
      receiver.reply = () => 200;
      start(db2);
      await waitFor(() => receiver.delivered().length === ids.length, 10000, 'everything delivered after the restart');
      assert.ok(receiver.requests.length > before);
      assert.deepEqual(new Set(receiver.delivered().map((r) => r.json.id)), new Set(ids));
      assertOrderPerCall(receiver.requests, byCall);
      await waitFor(() => allDelivered(db2), 3000, 'every row delivered');
      for (const r of await db2('event_outbox').select('id', 'attempts', 'state')) {
        assert.equal(r.state, 'delivered');
        assert.ok(Number(r.attempts) > attemptsAtRestart.get(r.id)!, 'attempts continue, not reset');
      }
    });

    it('two outboxes on one database (two nodes) deliver each event once, in order per call', async () => {
      const f = await open();
      const db2 = await f.reopen();
      cleanups.push(() => db2.destroy());
      const one = start(f.db);
      start(db2);
      const accountId = await seedAccount(f.db, receiver.url('/status'));
      const byCall = new Map<string, string[]>();
      const ids: string[] = [];
      const calls = await Promise.all([1, 2, 3, 4].map(() => seedCall(f.db, accountId)));
      for (const code of CALL_CODES) {
        for (const c of calls) {
          const e = await one.publisher.emit({ accountId, code, callId: c.id });
          ids.push(e.id);
          byCall.set(c.sid, [...(byCall.get(c.sid) ?? []), e.id]);
        }
      }
      await waitFor(() => receiver.delivered().length === ids.length, 10000, 'all delivered');
      await waitFor(() => allDelivered(f.db), 3000, 'every row delivered');
      await sleep(100);
      assert.equal(receiver.requests.length, ids.length, 'no event sent twice while both workers ran');
      assertOrderPerCall(receiver.requests, byCall);
    });

    it('5 exhausted deliveries disable the route; a success on another route does not re-enable it', async () => {
      const { db } = await open();
      const ev = start(db, { retryDelaysMs: [5, 5] });
      const routeA = receiver.url('/a');
      const routeB = receiver.url('/b');
      const accountId = await seedAccount(db, routeA);
      receiver.reply = (r) => (r.url === routeA ? 500 : 200);

      for (let i = 0; i < 5; i++) await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { i } });
      await waitFor(
        async () => (await db('event_outbox').where({ state: 'failed' })).length === 5,
        8000,
        'five exhausted deliveries',
      );
      assert.equal(receiver.requests.length, 15, '3 attempts each');
      const route = await db('webhook_routes').where({ account_id: accountId, url: routeA }).first();
      assert.equal(Number(route.consecutive_failures), 5);
      assert.ok(route.disabled);
      await waitFor(() => ev.seen.some((e) => e.frame.data?.routeDisabled === true), 2000, 'the account is told');
      const notices = ev.seen.filter((e) => e.frame.data?.routeDisabled === true);
      assert.equal(notices.length, 1);
      assert.equal(notices[0]!.frame.code, 'WH.0400');
      assert.equal(notices[0]!.accountId, accountId);
      await waitFor(
        () => ev.seen.filter((e) => e.frame.code === 'WH.0400').length === 6,
        2000,
        '5 exhausted + 1 route disabled',
      );

      const sixth = await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { i: 6 } });
      assert.equal(sixth.delivery, 'route_disabled');
      const row = await db('event_outbox').where({ id: sixth.id }).first();
      assert.equal(row.state, 'failed');
      assert.equal(row.last_error, 'route_disabled');
      await sleep(150);
      assert.equal(receiver.requests.length, 15, 'nothing sent to a disabled route');

      await db('accounts').where({ id: accountId }).update({ webhook_status: routeB });
      await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { i: 7 } });
      await waitFor(() => receiver.delivered().length === 1, 3000, 'delivery to route B');
      assert.equal(receiver.delivered()[0]!.url, routeB);
      const a = await db('webhook_routes').where({ account_id: accountId, url: routeA }).first();
      assert.ok(a.disabled, 'A stays disabled');
      const routeOf = (url: string) => db('webhook_routes').where({ account_id: accountId, url }).first();
      await waitFor(async () => Boolean(await routeOf(routeB)), 3000, 'the success recorded');
      const b = await routeOf(routeB);
      assert.equal(Number(b.consecutive_failures), 0);
      assert.ok(!b.disabled);
    });

    it('a single success resets the failure counter', async () => {
      const { db } = await open();
      const ev = start(db, { retryDelaysMs: [5] });
      const accountId = await seedAccount(db, receiver.url('/r'));
      let failing = true;
      receiver.reply = () => (failing ? 500 : 200);
      const burst = async (n: number) => {
        for (let i = 0; i < n; i++) await ev.publisher.emit({ accountId, code: EventCodes.walletLow });
        await waitFor(
          async () => (await db('event_outbox').where({ state: 'pending' })).length === 0,
          5000,
          'burst settled',
        );
      };
      await burst(4);
      failing = false;
      await burst(1);
      failing = true;
      await burst(4);
      const route = await db('webhook_routes').where({ account_id: accountId }).first();
      assert.equal(Number(route.consecutive_failures), 4);
      assert.ok(!route.disabled);
    });

    it('a 3xx is a failure and is not followed; a receiver that hangs times out and is retried', async () => {
      const { db } = await open();
      const ev = start(db, { retryDelaysMs: [10, 10, 10], attemptTimeoutMs: 200 });
      const url = receiver.url('/x');
      const accountId = await seedAccount(db, url);
      const replies: Array<number | 'hang'> = [302, 'hang', 200];
      receiver.reply = () => replies.shift() ?? 200;
      const c = await seedCall(db, accountId);
      const e = await ev.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: c.id });
      await waitFor(() => receiver.delivered().length === 1, 5000, 'delivered on the third attempt');
      assert.deepEqual(
        receiver.requests.map((r) => [r.url, r.status]),
        [
          [url, 302],
          [url, 0],
          [url, 200],
        ],
        'the redirect target was never requested',
      );
      await waitFor(
        async () => (await db('event_outbox').where({ id: e.id }).first()).state === 'delivered',
        2000,
        'row delivered',
      );
      const row = await db('event_outbox').where({ id: e.id }).first();
      assert.equal(Number(row.attempts), 3);
    });

    it('purge removes finished rows older than the cut-off and never a pending one', async () => {
      const { db } = await open();
      const ev = start(db);
      const accountId = await seedAccount(db, receiver.url('/p'));
      receiver.reply = (r) => (r.json.data?.keep ? 503 : 200);
      const done = await ev.publisher.emit({ accountId, code: EventCodes.walletLow });
      const pending = await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: { keep: true } });
      await waitFor(
        async () => (await db('event_outbox').where({ id: done.id }).first()).state === 'delivered',
        3000,
        'first delivered',
      );
      assert.equal(await ev.outbox.purge(new Date(Date.now() - 60_000)), 0, 'nothing that old');
      assert.equal(await ev.outbox.purge(new Date(Date.now() + 60_000)), 1);
      assert.deepEqual(
        (await db('event_outbox').select('id')).map((r) => r.id),
        [pending.id],
      );
    });

    it("resolves the status URL: the call's DID override, else the account default, else none", async () => {
      const { db } = await open();
      const ev = start(db);
      const didUrl = receiver.url('/did');
      const acctUrl = receiver.url('/acct');
      const accountId = await seedAccount(db, acctUrl);
      const numberId = 'num-1';
      await db('numbers').insert({
        id: numberId,
        number: '+254711000001',
        account_id: accountId,
        is_active: true,
        webhook_status: didUrl,
        webhook_voice_inbound: receiver.url('/not-this-one'),
        created_at: new Date().toISOString(),
      });
      const viaDid = await seedCall(db, accountId, { number_id: numberId });
      const plain = await seedCall(db, accountId);
      const a = await ev.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: viaDid.id });
      const b = await ev.publisher.emit({ accountId, code: EventCodes.callInitiated, callId: plain.id });
      assert.equal(a.url, didUrl);
      assert.equal(b.url, acctUrl);
      await waitFor(() => receiver.delivered().length === 2, 3000, 'both delivered');
      assert.equal(receiver.delivered().find((r) => r.json.id === a.id)!.url, didUrl);
      assert.equal(receiver.delivered().find((r) => r.json.id === b.id)!.url, acctUrl);

      const bare = await seedAccount(db, '');
      const n = await ev.publisher.emit({ accountId: bare, code: EventCodes.walletLow });
      assert.equal(n.delivery, 'no_route');
      assert.equal((await db('event_outbox').where({ id: n.id })).length, 0);
      assert.equal((await db('call_events').where({ id: n.id })).length, 1, 'still recorded');
    });
  });
