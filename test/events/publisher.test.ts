import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Db } from '../../store/index.js';
import {
  EventBus,
  EventCodes,
  EventIdGenerator,
  EventPublisher,
  InvalidEventError,
  PlatformConcurrencyMonitor,
  reportSystemError,
  type BusEvent,
} from '../../events/index.js';
import { fileDb, seedAccount, seedCall, sleep, waitFor } from './helpers.js';
import { quiet } from './setup.js';

describe('events: bus, publisher and system errors', () => {
  let db: Db;
  let bus: EventBus;
  let publisher: EventPublisher;
  let seen: BusEvent[];

  beforeEach(async () => {
    db = (await fileDb()).db;
    bus = new EventBus(quiet);
    seen = [];
    bus.observe((e) => seen.push(e));
    publisher = new EventPublisher({ db, bus, logger: quiet });
  });
  afterEach(() => db.destroy());

  it('a throwing listener neither stops the others nor the publisher', async () => {
    const a = await seedAccount(db);
    const got: string[] = [];
    bus.subscribe(a, () => {
      throw new Error('bad consumer');
    });
    const off = bus.subscribe(a, (e) => got.push(e.frame.code));
    await publisher.emit({ accountId: a, code: EventCodes.walletLow });
    assert.deepEqual(got, ['BILL.0310']);
    off();
    await publisher.emit({ accountId: a, code: EventCodes.walletLow });
    assert.equal(got.length, 1, 'unsubscribed');
    assert.equal(seen.length, 2, 'observers see everything');
  });

  it('records the event in call_events with the same id as the bus event', async () => {
    const a = await seedAccount(db);
    const c = await seedCall(db, a);
    const e = await publisher.emit({ accountId: a, code: EventCodes.callAnswered, callId: c.id, data: { leg: 1 } });
    const row = await db('call_events').where({ id: e.id }).first();
    assert.equal(row.account_id, a);
    assert.equal(row.call_id, c.id);
    assert.equal(row.code, 'CALL.0200');
    assert.equal(row.event, 'call.answered');
    assert.deepEqual(JSON.parse(row.data), { leg: 1 });
    assert.equal(seen[0]!.id, e.id);
    assert.equal(seen[0]!.frame.sid, c.sid);
  });

  it('call.failed carries reasonCode, duration and cost from the call; a given snapshot is used as is', async () => {
    const a = await seedAccount(db);
    const c = await seedCall(db, a, { status: 'failed', reason_code: 'END.0480', duration_seconds: 30 });
    const e = await publisher.emit({ accountId: a, code: EventCodes.callFailed, callId: c.id });
    assert.deepEqual(e.frame.data, { reasonCode: 'END.0480', duration: 30, cost: '0.00' });
    const snap = {
      sid: 'call_x',
      direction: 'inbound',
      from_number: '1',
      to_number: '2',
      status: 'completed',
      reason_code: 'END.0200',
      duration_seconds: 5,
      talk_seconds: 4,
      started_at: null,
      answered_at: null,
      ended_at: null,
      cost: '1.20',
    };
    const e2 = await publisher.emit({
      accountId: a,
      code: EventCodes.callCompleted,
      callId: c.id,
      sid: 'call_x',
      customPayload: null,
      callSnapshot: snap,
    });
    assert.deepEqual(e2.frame.data, { reasonCode: 'END.0200', duration: 5, cost: '1.20' });
  });

  it('a call row the caller holds is used as is: the call is not read again', async () => {
    const a = await seedAccount(db);
    await db('accounts').where({ id: a }).update({ webhook_status: 'http://127.0.0.1:9/status' });
    const c = await seedCall(db, a, { custom_payload: JSON.stringify({ stored: true }) });
    const held = await db('calls').where({ id: c.id }).first();
    const callRow = { ...held, custom_payload: JSON.stringify({ held: 1 }), reason_code: 'END.0200', cost_cents: 120 };
    const reads: string[] = [];
    const onQuery = (q: { sql: string }): void => void (/from .calls./i.test(q.sql) && reads.push(q.sql));
    db.on('query', onQuery);
    try {
      const e = await publisher.emit({ accountId: a, code: EventCodes.callCompleted, callId: c.id, callRow });
      assert.deepEqual(reads, [], 'no read of the calls table');
      assert.equal(e.frame.sid, c.sid);
      assert.deepEqual(e.frame.customPayload, { held: 1 });
      assert.equal((e.frame.data as Record<string, unknown>).reasonCode, 'END.0200');
      assert.equal((e.frame.data as Record<string, unknown>).cost, '1.20');
      assert.equal(e.delivery, 'queued');
    } finally {
      db.off('query', onQuery);
    }
  });

  it('refuses a code outside the catalogue and PLATFORM.0001 through emit', async () => {
    const a = await seedAccount(db);
    await assert.rejects(publisher.emit({ accountId: a, code: 'CALL.9999' as never }), InvalidEventError);
    await assert.rejects(publisher.emit({ accountId: a, code: EventCodes.platformConcurrent }), InvalidEventError);
  });

  it('event ids sort in creation order even within one millisecond', () => {
    const g = new EventIdGenerator(() => 1_700_000_000_000);
    const ids = Array.from({ length: 5000 }, () => g.next());
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
    assert.match(ids[0]!, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('PLATFORM.0001 goes to staff on calls starting and ending, with the live count from the store', async () => {
    const monitor = new PlatformConcurrencyMonitor({ db, publisher, debounceMs: 10, intervalMs: 1e6, logger: quiet });
    try {
      const a = await seedAccount(db);
      const b = await seedAccount(db);
      const counts = () => seen.filter((e) => e.frame.code === 'PLATFORM.0001').map((e) => e.frame.data?.activeCalls);
      const c1 = await seedCall(db, a);
      await seedCall(db, b, { status: 'answered' });
      await seedCall(db, b, { status: 'completed' });
      await publisher.emit({ accountId: a, code: EventCodes.callInitiated, callId: c1.id });
      await waitFor(() => counts().length === 1, 2000, 'first count');
      assert.deepEqual(counts(), [2]);
      assert.ok(seen.filter((e) => e.frame.code === 'PLATFORM.0001').every((e) => e.staffOnly && !e.accountId));

      await publisher.emit({ accountId: a, code: EventCodes.callRinging, callId: c1.id });
      await sleep(50);
      assert.deepEqual(counts(), [2], 'ringing does not change the count');

      await db('calls').where({ id: c1.id }).update({ status: 'failed', reason_code: 'END.0486' });
      await publisher.emit({ accountId: a, code: EventCodes.callFailed, callId: c1.id });
      await waitFor(() => counts().length === 2, 2000, 'second count');
      assert.deepEqual(counts(), [2, 1]);
      await monitor.recount();
      assert.equal(counts().length, 2, 'unchanged: not republished');
      await monitor.recount(true);
      assert.deepEqual(counts(), [2, 1, 1], 'the periodic publish goes out regardless');
    } finally {
      monitor.close();
    }
  });

  it('reportSystemError logs a traceId and emits SYS.0500 carrying the same traceId', async () => {
    const a = await seedAccount(db);
    const lines: any[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, cb) {
          lines.push(JSON.parse(String(chunk)));
          cb();
        },
      }),
    );
    const traceId = await reportSystemError(new Error('db went away'), {
      publisher,
      operation: 'calls.onBye',
      accountId: a,
      logger,
    });
    assert.match(traceId, /^[0-9a-f]{32}$/);
    const logged = lines.find((l) => l.traceId === traceId);
    assert.ok(logged, 'logged with the trace id');
    assert.equal(logged.err.message, 'db went away');
    const ev = seen.find((e) => e.frame.code === 'SYS.0500')!;
    assert.equal(ev.accountId, a);
    assert.deepEqual(ev.frame.data, { traceId }, 'the account sees the trace id, not the error');
    assert.equal((await db('call_events').where({ code: 'SYS.0500' })).length, 1);

    // Without an account: staff only.
    const t2 = await reportSystemError(new Error('x'), { publisher, operation: 'sweep', logger });
    const staffOnly = seen.find((e) => e.frame.data?.traceId === t2)!;
    assert.ok(staffOnly.staffOnly);
  });
});
