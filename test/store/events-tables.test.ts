import assert from 'node:assert/strict';
import {
  countAllLiveCalls,
  countCallEvents,
  disableWebhookRoute,
  dueOutboxRows,
  findNumberByE164,
  findNumberOf,
  findWebhookRoute,
  inTransaction,
  insertAccount,
  insertCall,
  insertCallEvents,
  insertOutboxRows,
  addPoolNumbers,
  leaseOutboxRows,
  markOutboxRowsDelivered,
  outboxRowsNotSendable,
  releaseOutboxLeases,
  listCallEvents,
  noteRouteDelivered,
  noteRouteFailed,
  purgeFinishedOutboxRows,
  takePoolNumber,
  type Db,
  type NewOutboxRow,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** The store functions events/ works through: call events, the status-callback outbox, webhook routes. */
for (const kind of BOTH_DBS) {
  describe(`store: events tables on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    const T0 = '2024-01-01T00:00:00.000Z';
    const row = (id: string, account: string, callId: string | null, over: Partial<NewOutboxRow> = {}) => ({
      id,
      account_id: account,
      call_id: callId,
      event: 'call.completed',
      route: 'status',
      url: 'https://s.example/',
      body: '{}',
      attempts: 0,
      state: 'pending' as const,
      last_error: null,
      next_attempt_at: T0,
      leased_by: null,
      created_at: T0,
      done_at: null,
      ...over,
    });

    it('hands out due rows in id order, one per call at a time, leaving out excluded accounts', async () => {
      // Event ids as the publisher makes them (UUIDv7, store/ids.ts), of T0's millisecond: purge reads by id range.
      const o = (n: number) => `018cc251-f400-7000-8000-00000000000${n}`;
      const a = await insertAccount(db, 'Out');
      const b = await insertAccount(db, 'Busy');
      await insertOutboxRows(db, [row(o(1), a.id, 'c1')]);
      await insertOutboxRows(db, [row(o(2), a.id, 'c1')]); // behind o1 of the same call
      await insertOutboxRows(db, [row(o(3), a.id, 'c2', { next_attempt_at: '2024-01-01T00:00:09.000Z' })]); // not due
      await insertOutboxRows(db, [row(o(4), b.id, 'c3')]);
      await insertOutboxRows(db, [row(o(5), a.id, null, { attempts: 2 })]);
      const due = await dueOutboxRows(db, '2024-01-01T00:00:05.000Z', [b.id], 10);
      assert.deepEqual(
        due.map((r) => r.id),
        [o(1), o(5)],
      );
      assert.equal(due[1].attempts, 2);
      assert.deepEqual(
        (await dueOutboxRows(db, '2024-01-01T00:00:05.000Z', [], 2)).map((r) => r.id),
        [o(1), o(4)],
      );
      // The lease: only one of two readers of the same row wins; a row behind a pending row of its call, or not due,
      // is not leased.
      const now = '2024-01-01T00:00:05.000Z';
      const lease = '2024-01-01T00:01:00.000Z';
      const won = await leaseOutboxRows(db, [o(1), o(2), o(3), o(5)], lease, now, 'n1');
      assert.deepEqual([...won].sort(), [
        [o(1), 0],
        [o(5), 2],
      ]);
      assert.equal((await leaseOutboxRows(db, [o(1)], lease, now, 'n2')).size, 0, 'leased already');
      await markOutboxRowsDelivered(db, [{ id: o(1), attempts: 1, status: 204 }], T0);
      assert.deepEqual(
        await db('event_outbox')
          .where({ id: o(1) })
          .first('state', 'attempts', 'reply_status', 'done_at', 'body'),
        { state: 'delivered', attempts: 1, reply_status: 204, done_at: T0, body: '{}' },
      );
      assert.deepEqual(
        (await dueOutboxRows(db, '2024-01-01T00:00:05.000Z', [b.id], 10)).map((r) => r.id),
        [o(2)],
        'the next of the call once the first is done (o5 is leased)',
      );
      assert.equal(await purgeFinishedOutboxRows(db, '2024-01-01T00:00:01.000Z'), 1);
      assert.equal(await purgeFinishedOutboxRows(db, '2024-01-01T00:00:01.000Z'), 0, 'pending rows stay');
    });

    it("rows queued leased to a node: hidden from others' polls and leases until the node ends its leases", async () => {
      const a = await insertAccount(db, 'Held');
      const now = '2024-01-01T00:00:05.000Z';
      const until = '2024-01-01T00:00:25.000Z';
      await insertOutboxRows(db, [
        row('h1', a.id, 'hc1', { next_attempt_at: until, leased_by: 'k1' }),
        row('h2', a.id, 'hc1', { next_attempt_at: until, leased_by: 'k1' }),
        row('h3', a.id, 'hc2', { next_attempt_at: until, leased_by: 'k1' }),
      ]);
      const mine = (await dueOutboxRows(db, now, [], 100)).filter((r) => r.account_id === a.id);
      assert.deepEqual(mine, [], 'not due for any poll');
      assert.equal(
        (await leaseOutboxRows(db, ['h1', 'h3'], until, now, 'k2')).size,
        0,
        'another node cannot lease them',
      );
      // The node itself may lease again what it holds (a row that waited past its queued lease), in order per call.
      assert.deepEqual([...(await leaseOutboxRows(db, ['h1', 'h2'], until, now, 'k1')).keys()], ['h1']);
      // The check of rows sent under their queued lease: h2 is behind h1 of its call, h3 is first of its own; to
      // another node, none is its own.
      assert.deepEqual([...(await outboxRowsNotSendable(db, ['h2', 'h3'], 'k1'))], ['h2']);
      assert.deepEqual([...(await outboxRowsNotSendable(db, ['h2', 'h3'], 'k2'))].sort(), ['h2', 'h3']);
      // Another node's ending its leases touches nothing; the node's own makes its rows due, for anyone.
      assert.equal(await releaseOutboxLeases(db, 'k2', now), 0);
      assert.equal(await releaseOutboxLeases(db, 'k1', now, ['h3']), 1);
      assert.deepEqual(
        (await dueOutboxRows(db, now, [], 100)).filter((r) => r.account_id === a.id).map((r) => r.id),
        ['h3'],
      );
      assert.equal(await releaseOutboxLeases(db, 'k1', now), 2, 'all the rest');
      assert.deepEqual(
        [...(await outboxRowsNotSendable(db, ['h1'], 'k1'))],
        ['h1'],
        'a lease ended is no longer sent under it',
      );
      assert.deepEqual(
        (await dueOutboxRows(db, now, [], 100)).filter((r) => r.account_id === a.id).map((r) => r.id),
        ['h1', 'h3'],
      );
    });

    it('counts route failures atomically, resets them on delivery, and disables a route', async () => {
      const a = await insertAccount(db, 'Routes');
      const url = { route: 'status', url: 'https://r.example/' };
      assert.equal(await findWebhookRoute(db, a.id, url), undefined);
      const first = await inTransaction(db, (tx) => noteRouteFailed(tx, a.id, url, T0));
      assert.equal(first.consecutive_failures, 1);
      await Promise.all([1, 2, 3].map(() => inTransaction(db, (tx) => noteRouteFailed(tx, a.id, url, T0))));
      assert.equal((await findWebhookRoute(db, a.id, url))?.consecutive_failures, 4);
      await disableWebhookRoute(db, a.id, url, T0);
      const off = await findWebhookRoute(db, a.id, url);
      assert.deepEqual([off?.disabled, off?.disabled_at], [true, T0]);
      await noteRouteDelivered(db, a.id, url, T0);
      assert.equal((await findWebhookRoute(db, a.id, url))?.consecutive_failures, 0);
      const other = { route: 'status', url: 'https://new.example/' };
      await noteRouteDelivered(db, a.id, other, T0);
      assert.equal((await findWebhookRoute(db, a.id, other))?.disabled, false);
    });

    it('writes a batch larger than one statement in statements of 500 events and 200 callbacks, in order', async () => {
      const a = await insertAccount(db, 'Chunks');
      const inserts: string[] = [];
      const seen = (q: { sql: string }) => {
        if (/^insert into .(call_events|event_outbox)/.test(q.sql)) inserts.push(q.sql.split(' ')[2]!);
      };
      db.on('query', seen);
      try {
        const at = (i: number) => new Date(Date.parse(T0) + i).toISOString();
        const events = Array.from({ length: 1001 }, (_, i) => ({
          id: `ch-e${i}`,
          account_id: a.id,
          call_id: 'ch-call',
          code: 'CALL.0100',
          event: `e${i}`,
          data: '{}',
          created_at: at(i),
        }));
        await insertCallEvents(db, events);
        await insertOutboxRows(
          db,
          Array.from({ length: 401 }, (_, i) => row(`ch-o${String(i).padStart(4, '0')}`, a.id, `ch-c${i}`)),
        );
      } finally {
        db.off('query', seen);
      }
      assert.deepEqual(
        inserts.map((t) => t.replace(/\W/g, '')),
        [...Array(3).fill('call_events'), ...Array(3).fill('event_outbox')],
      );
      const listed = await listCallEvents(db, a.id, 'ch-call');
      assert.deepEqual(
        listed.map((e) => e.event),
        Array.from({ length: 1001 }, (_, i) => `e${i}`),
      );
      const due = await dueOutboxRows(db, T0, [], 1000);
      assert.equal(due.filter((r) => r.account_id === a.id).length, 401);
    });

    it("lists a call's delivered status callbacks among its events as WH.0200, in time order, paged and counted", async () => {
      const a = await insertAccount(db, 'Delivered');
      const other = await insertAccount(db, 'Other');
      const at = (s: number) => `2024-01-01T00:00:0${s}.000Z`;
      const event = (id: string, s: number) => ({
        id,
        account_id: a.id,
        call_id: 'dc1',
        code: 'CALL.0100',
        event: 'call.initiated',
        data: '{"n":1}',
        created_at: at(s),
      });
      await insertCallEvents(db, [event('de1', 1), event('de3', 3)]);
      await insertOutboxRows(db, [
        row('do1', a.id, 'dc1', { route: 'status:number:n1', url: 'https://d.example/s' }),
        row('do2', a.id, 'dc1'), // still pending: no WH.0200
        row('do3', a.id, 'dc2'), // another call
        row('do4', other.id, 'dc1'), // another account
      ]);
      await markOutboxRowsDelivered(db, [{ id: 'do1', attempts: 2, status: 200 }], at(2));
      await markOutboxRowsDelivered(db, [{ id: 'do3', attempts: 1, status: 200 }], at(2));
      await markOutboxRowsDelivered(db, [{ id: 'do4', attempts: 1, status: 200 }], at(2));
      // Delivered before the reply's status was kept: its WH.0200 is a stored call event, listed once.
      await insertOutboxRows(db, [row('do5', a.id, 'dc1', { state: 'delivered', done_at: at(4) })]);

      const listed = await listCallEvents(db, a.id, 'dc1');
      assert.deepEqual(
        listed.map((e) => [e.code, e.event, e.created_at]),
        [
          ['CALL.0100', 'call.initiated', at(1)],
          ['WH.0200', 'webhook.delivered', at(2)],
          ['CALL.0100', 'call.initiated', at(3)],
        ],
      );
      assert.deepEqual(JSON.parse(listed[1]!.data), {
        eventId: 'do1',
        event: 'call.completed',
        url: 'https://d.example/s',
        route: 'status:number:n1',
        attempts: 2,
        status: 200,
      });
      assert.equal(listed[0]!.data, '{"n":1}');
      assert.deepEqual(
        (await listCallEvents(db, a.id, 'dc1', { limit: 2, offset: 1 })).map((e) => e.code),
        ['WH.0200', 'CALL.0100'],
      );
      assert.equal(await countCallEvents(db, a.id, 'dc1'), 3);
      assert.equal(await countCallEvents(db, other.id, 'dc1'), 1);
    });

    it('records call events, finds an owned number, counts live calls of every account', async () => {
      const a = await insertAccount(db, 'Ev');
      const b = await insertAccount(db, 'Ev2');
      await insertCallEvents(db, [
        {
          id: 'e1',
          account_id: a.id,
          call_id: 'c9',
          code: 'CALL.0100',
          event: 'call.initiated',
          data: '{}',
          created_at: T0,
        },
      ]);
      assert.equal((await listCallEvents(db, a.id, 'c9')).length, 1);
      await addPoolNumbers(db, ['+254711000099']);
      const n = (await findNumberByE164(db, '+254711000099'))!;
      await takePoolNumber(db, n.id, a.id, T0);
      assert.equal((await findNumberOf(db, a.id, n.id))?.id, n.id);
      assert.equal(await findNumberOf(db, b.id, n.id), undefined);
      const before = await countAllLiveCalls(db);
      const call = (account: string, status: 'ringing' | 'failed') =>
        insertCall(db, { account_id: account, direction: 'outbound', from_number: '+1', to_number: '+2', status });
      await call(a.id, 'ringing');
      await call(b.id, 'ringing');
      await call(b.id, 'failed');
      assert.equal(await countAllLiveCalls(db), before + 2);
    });
  });
}
