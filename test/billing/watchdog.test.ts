import assert from 'node:assert/strict';
import { CreditMonitor, RateBook, StoreHeartbeatWatchdog, post } from '../../billing/index.js';
import { insertAccount, setRate, newId, newCallSid, nowIso, type Db } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { FAKE_EPOCH, quietLog } from './fake-timers.js';
import { ManualClock } from '../../kit/index.js';

describe('billing/watchdog across processes (heartbeats in the store)', function () {
  this.timeout(30000);
  let db: Db;
  before(async () => {
    db = await sqliteDb.open();
    await setRate(db, 'outbound', 120, '254');
  });
  after(async () => db?.destroy());

  async function answeredCall(accountId: string): Promise<string> {
    const id = newId();
    await db('calls').insert({
      id,
      sid: newCallSid(),
      account_id: accountId,
      direction: 'outbound',
      from_number: '+254700000000',
      to_number: '+254733000000',
      status: 'answered',
      created_at: nowIso(new Date(FAKE_EPOCH)),
      answered_at: nowIso(new Date(FAKE_EPOCH)),
    });
    return id;
  }

  it('the legs process cuts a call whose monitor stopped writing heartbeats, and one no monitor recorded', async () => {
    const timers = new ManualClock(FAKE_EPOCH);
    const acct = await insertAccount(db, 'Split');
    await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 1_000_000 });
    const guarded = await answeredCall(acct.id);
    const unguarded = await answeredCall(acct.id);
    // The monitor "process": heartbeats every second; its own in-process watchdog is out of the picture here.
    const monitor = new CreditMonitor({
      db,
      rates: new RateBook(db, { clock: { now: () => timers.now() } }),
      clock: timers,
      nodeId: 'billing-1',
      heartbeatPersistMs: 1000,
      watchdogStallMs: 1e9,
      cut: () => assert.fail('the monitor itself cuts nothing here'),
      emit: () => undefined,
      logger: quietLog,
    });
    const cuts: Array<{ id: string; at: number }> = [];
    const legs = new StoreHeartbeatWatchdog({
      db,
      clock: timers,
      held: () => [guarded, unguarded],
      cut: (id) => cuts.push({ id, at: timers.now() }),
      stallMs: 3000,
      checkMs: 500,
      graceMs: 2000,
      logger: quietLog,
    });
    const step = async (ms: number) => {
      for (let t = 0; t < ms; t += 100) {
        timers.advance(100);
        await monitor.drain();
        await legs.check();
      }
    };
    try {
      const t0 = timers.now();
      await monitor.callAnswered({
        callId: guarded,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254733000000',
        answeredAt: t0,
      });
      await step(10_000);
      assert.deepEqual(
        cuts.map((c) => c.id),
        [unguarded],
        'only the call no monitor recorded, after its grace',
      );
      assert.ok(cuts[0].at - t0 > 2000 && cuts[0].at - t0 <= 2600);
      timers.stall('credit-tick'); // the monitor stops: no more heartbeats
      const stalledAt = timers.now();
      await step(2500);
      assert.equal(cuts.length, 1, 'not before the stall limit');
      await step(2500);
      assert.deepEqual(
        cuts.map((c) => c.id),
        [unguarded, guarded],
      );
      assert.ok(cuts[1].at - stalledAt <= 4100, 'within the stall limit plus one heartbeat period');
      await step(3000);
      assert.equal(cuts.length, 2, 'each call cut once');
    } finally {
      legs.close();
      await monitor.close();
    }
  });
});
