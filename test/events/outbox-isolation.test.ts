import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { EventCodes } from '../../events/index.js';
import { UrlPolicy } from '../../kit/index.js';
import { Receiver, fileDb, seedAccount, seedCall, waitFor } from './helpers.js';
import { eventsOn } from './setup.js';

/** Issue 22: status callbacks go only where the URL policy allows, and one tenant cannot starve the others. */
describe('events: status-callback outbox isolation (issue 22)', function () {
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

  async function db(): Promise<Db> {
    const f = await fileDb();
    cleanups.push(() => f.db.destroy());
    return f.db;
  }
  function start(d: Db, opts: Parameters<typeof eventsOn>[1]) {
    const ev = eventsOn(d, opts);
    cleanups.push(() => ev.outbox.close());
    return ev;
  }

  it("one tenant's hanging status URL holds at most its share of the slots; another tenant's callbacks stay fast", async () => {
    const d = await db();
    // 4 shared slots, attempts of 3 s: without a per-account cap tenant A's 8 hanging calls fill all 4 slots.
    const ev = start(d, { maxInFlight: 4, attemptTimeoutMs: 3000, retryDelaysMs: [5000] });
    const a = await seedAccount(d, receiver.url('/dead'));
    const b = await seedAccount(d, receiver.url('/alive'));
    receiver.reply = (r) => (r.url.endsWith('/dead') ? 'hang' : 200);
    for (let i = 0; i < 8; i++) {
      const c = await seedCall(d, a);
      await ev.publisher.emit({ accountId: a, code: EventCodes.callInitiated, callId: c.id });
    }
    await waitFor(() => receiver.requests.filter((r) => r.url.endsWith('/dead')).length >= 2, 3000, 'A hanging');
    const latencies: number[] = [];
    for (let i = 0; i < 3; i++) {
      const c = await seedCall(d, b);
      const t0 = Date.now();
      const e = await ev.publisher.emit({ accountId: b, code: EventCodes.callInitiated, callId: c.id });
      await waitFor(() => receiver.delivered().some((r) => r.json.id === e.id), 5000, `B's event ${i}`);
      latencies.push(Date.now() - t0);
    }
    const deadInFlight = receiver.requests.filter((r) => r.url.endsWith('/dead')).length;
    assert.equal(deadInFlight, 2, 'A holds 2 of the 4 slots (a quarter, at least 2), no more');
    assert.ok(Math.max(...latencies) < 1000, `B's callbacks delivered in ${latencies.join(', ')} ms`);
  });

  it('a status URL on a refused address is never requested and fails with the stable reason URL_FORBIDDEN', async () => {
    const d = await db();
    const ev = start(d, { urlPolicy: new UrlPolicy(), retryDelaysMs: [10] });
    const open = await seedAccount(d, receiver.url('/status')); // a live server on 127.0.0.1
    const closed = await seedAccount(d, 'http://127.0.0.1:1/status'); // nothing listens there
    const metadata = await seedAccount(d, 'http://169.254.169.254/latest/meta-data/');
    const ids: string[] = [];
    for (const accountId of [open, closed, metadata]) {
      ids.push((await ev.publisher.emit({ accountId, code: EventCodes.walletLow, data: {} })).id);
    }
    await waitFor(
      async () => (await d('event_outbox').whereIn('id', ids).where({ state: 'failed' })).length === 3,
      5000,
      'all three given up',
    );
    assert.equal(receiver.requests.length, 0, 'the loopback receiver was never reached');
    const rows = await d('event_outbox').whereIn('id', ids);
    assert.deepEqual(
      rows.map((r) => [r.last_error, Number(r.attempts)]),
      [
        ['URL_FORBIDDEN', 2],
        ['URL_FORBIDDEN', 2],
        ['URL_FORBIDDEN', 2],
      ],
      'the same reason whether a server listens, the port is closed or it is the metadata address',
    );
    await waitFor(() => ev.seen.filter((e) => e.frame.code === 'WH.0400').length === 3, 3000, 'WH.0400 x3');
    for (const e of ev.seen.filter((x) => x.frame.code === 'WH.0400')) {
      assert.equal((e.frame.data as { lastError: string }).lastError, 'URL_FORBIDDEN');
    }
  });
});
