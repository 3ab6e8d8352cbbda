import assert from 'node:assert/strict';
import { CallLifecycle } from '../../calls/call-lifecycle.js';
import { AMD_CALLBACK_ROUTE, reportMachineDetection } from '../../calls/machine-detection.js';
import { verifyWebhookSignature } from '../../events/index.js';
import type { MachineDetectionResult } from '../../media/index.js';
import type { CallRow, Db } from '../../store/index.js';
import { quietLogger } from '../support/logger.js';
import { Receiver, STORES, seedAccount, seedCall, sleep, waitFor } from '../events/helpers.js';
import { eventsOn } from '../events/setup.js';

const VERDICT: MachineDetectionResult = {
  answeredBy: 'machine_end_beep',
  durationMs: 6800,
  audioMs: 6800,
  reason: 'beep',
  words: 9,
  voiceMs: 5900,
  segments: [],
};
const SECRET = 'whsec_amd-callback-test';

/**
 * The asynchronous AMD verdict (originate's async_amd_status_callback, a <Number>'s amdStatusCallback) goes through
 * the status-callback outbox: stored with AMD.0200, retried while the receiver is down, delivered after a restart,
 * and once; outside its call's order, so a failing status route does not hold it back.
 */
for (const store of STORES)
  describe(`calls: the async AMD callback through the outbox on ${store.name}`, function () {
    this.timeout(30_000);
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

    async function report(db: Db, ev: ReturnType<typeof eventsOn>, callId: string): Promise<void> {
      const row = (await db('calls').where({ id: callId }).first()) as CallRow;
      const life = new CallLifecycle({ db, events: ev.publisher, log: quietLogger }, row);
      const request = { mode: 'DetectMessageEnd' as const, async: true, statusCallbackUrl: receiver.url('/amd') };
      await reportMachineDetection(life, request, VERDICT);
    }

    const amdRequests = () => receiver.requests.filter((r) => r.url === receiver.url('/amd'));

    it('a receiver down at first, up after a restart of the outbox, gets the verdict once, signed', async () => {
      const f = await open();
      const first = eventsOn(f.db, { retryDelaysMs: [50, 100, 200, 400, 800, 1600, 3200] });
      const accountId = await seedAccount(f.db, '', SECRET);
      const call = await seedCall(f.db, accountId, { status: 'in-progress' });
      receiver.reply = () => 503;
      await report(f.db, first, call.id);
      await waitFor(() => amdRequests().length >= 2, 5000, 'attempts while the receiver is down');
      await first.outbox.close();
      await f.db.destroy();

      const db2 = await f.reopen();
      cleanups.push(() => db2.destroy());
      receiver.reply = () => 200;
      const second = eventsOn(db2);
      cleanups.push(() => second.outbox.close());
      await waitFor(() => amdRequests().some((r) => r.status === 200), 10_000, 'delivered after the restart');
      await sleep(500); // a second delivery would come within the poll interval (20 ms) and the retry delays
      const delivered = amdRequests().filter((r) => r.status === 200);
      assert.equal(delivered.length, 1, 'delivered exactly once');
      const r = delivered[0]!;
      assert.deepEqual(r.json, {
        AccountSid: accountId,
        AnsweredBy: 'machine_end_beep',
        CallSid: call.sid,
        Direction: 'outbound',
        From: '+254700000001',
        MachineDetectionDuration: 6800,
        To: '+254700000002',
      });
      const ts = r.headers['x-voice-timestamp'] as string;
      const sig = r.headers['x-voice-signature'] as string;
      assert.ok(verifyWebhookSignature(SECRET, receiver.url('/amd'), ts, r.raw.toString('utf8'), sig), 'signed');
      assert.equal(r.headers['x-voice-event'], 'call.machine_detection');
      assert.ok(
        amdRequests().every((x) => x.raw.equals(r.raw)),
        'every attempt sent the same bytes',
      );
      const outbox = await db2('event_outbox').where({ route: AMD_CALLBACK_ROUTE });
      assert.equal(outbox.length, 1);
      assert.equal(outbox[0].state, 'delivered');
      const stored = await db2('calls').where({ id: call.id }).first();
      assert.equal(stored.answered_by, 'machine_end_beep');
      assert.equal((await db2('call_events').where({ call_id: call.id, code: 'AMD.0200' })).length, 1);
    });

    it("a failing status route does not hold the verdict back (it is outside the call's order)", async () => {
      const f = await open();
      const ev = eventsOn(f.db);
      cleanups.push(() => ev.outbox.close());
      const accountId = await seedAccount(f.db, receiver.url('/status'), SECRET);
      const call = await seedCall(f.db, accountId, { status: 'in-progress' });
      receiver.reply = (r) => (r.url.endsWith('/status') ? 503 : 200);
      await report(f.db, ev, call.id);
      await waitFor(() => amdRequests().some((r) => r.status === 200), 5000, 'the verdict delivered');
      assert.ok(
        receiver.requests.some((r) => r.url.endsWith('/status') && r.json?.code === 'AMD.0200'),
        'the status route got AMD.0200 too',
      );
      const status = await f.db('event_outbox').where({ call_id: call.id }).first();
      assert.notEqual(status.state, 'delivered', 'the status callback is still failing');
    });
  });
