import assert from 'node:assert/strict';
import {
  CreditMonitor,
  RateBook,
  post,
  BillingCodes,
  type CutReason,
  type CallSettlement,
  settleCall,
  reconcileCall,
} from '../../billing/index.js';
import { insertAccount, getAccount, setRate, newId, newCallSid, nowIso, type Db } from '../../store/index.js';
import { BOTH_DBS, sqliteDb } from '../support/db.js';
import { driverOf } from '../../store/db.js';
import { FAKE_EPOCH, eventually, quietLog } from './fake-timers.js';
import { ManualClock } from '../../kit/index.js';

interface Harness {
  timers: ManualClock;
  monitor: CreditMonitor;
  cuts: Array<{ callId: string; reason: CutReason; at: number }>;
  events: Array<{ accountId: string; code: string; data: Record<string, unknown> }>;
  ended: Map<string, Promise<CallSettlement>>;
}

/** A monitor on a fake clock whose `cut` behaves like the calls room: the call ends at once and is settled. */
function harness(db: Db, opts: { endOnCut?: boolean; nodeId?: string } = {}): Harness {
  const timers = new ManualClock(FAKE_EPOCH);
  const cuts: Harness['cuts'] = [];
  const events: Harness['events'] = [];
  const ended = new Map<string, Promise<CallSettlement>>();
  const monitor: CreditMonitor = new CreditMonitor({
    db,
    rates: new RateBook(db, { clock: { now: () => timers.now() } }),
    clock: timers,
    nodeId: opts.nodeId,
    cut: (callId, reason) => {
      cuts.push({ callId, reason, at: timers.now() });
      if (opts.endOnCut !== false) ended.set(callId, monitor.callEnded(callId, timers.now()));
    },
    emit: (accountId, code, data) => events.push({ accountId, code, data }),
    logger: quietLog,
  });
  return { timers, monitor, cuts, events, ended };
}

async function insertCall(db: Db, accountId: string, to: string): Promise<string> {
  const id = newId();
  await db('calls').insert({
    id,
    sid: newCallSid(),
    account_id: accountId,
    direction: 'outbound',
    from_number: '+254700000000',
    to_number: to,
    status: 'answered',
    created_at: nowIso(new Date(FAKE_EPOCH)),
    answered_at: nowIso(new Date(FAKE_EPOCH)),
  });
  return id;
}

/** Advances the fake clock in small steps, letting store writes started by ticks land. */
async function run(h: Harness, ms: number, step = 50): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    h.timers.advance(step);
    await h.monitor.drain();
  }
}

async function assertChained(db: Db, accountId: string): Promise<number> {
  const rows = await db('wallet_transactions').where({ account_id: accountId }).orderBy('seq');
  let running = 0;
  for (const r of rows) {
    assert.equal(Number(r.balance_before_cents), running, `row ${r.seq} chains`);
    running += r.direction === 'credit' ? Number(r.amount_cents) : -Number(r.amount_cents);
    assert.ok(running >= 0, 'the balance never goes negative');
  }
  assert.equal((await getAccount(db, accountId)).balance_cents, running);
  return running;
}

for (const kind of BOTH_DBS) {
  describe(`billing/credit-monitor on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let h: Harness | undefined;
    before(async () => {
      db = await kind.open();
      await setRate(db, 'outbound', 120, '254'); // 2 cents a second
    });
    afterEach(async () => {
      await h?.monitor.close();
      h = undefined;
    });

    it("reads an account's balance once for its calls answered while its wallet holds live calls", async () => {
      const acct = await insertAccount(db, 'Reads');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 10_000 });
      const calls = [];
      for (let i = 0; i < 3; i++) calls.push(await insertCall(db, acct.id, `+25470000010${i}`));
      h = harness(db);
      const reads: string[] = [];
      const stop = driverOf(db).onStatement((st) => {
        if (/^select "balance_cents", "max_call_seconds"/.test(st.sql)) reads.push(st.sql);
      });
      try {
        const answer = (callId: string) =>
          h!.monitor.callAnswered({
            callId,
            accountId: acct.id,
            direction: 'outbound',
            to: '+254700000100',
            answeredAt: h!.timers.now(),
          });
        await answer(calls[0]!);
        assert.equal(reads.length, 1, 'the first call reads the balance');
        await answer(calls[1]!);
        assert.equal(reads.length, 1, 'a second call of the held wallet takes its balance');
        assert.equal(h.monitor.balanceOf(acct.id), 10_000);
        // A top-up reaches the wallet at its next refresh, and the calls answered after it.
        await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 500 });
        await run(h, 2100);
        assert.equal(h.monitor.balanceOf(acct.id), 10_500);
        await answer(calls[2]!);
        assert.equal(h.monitor.balanceOf(acct.id), 10_500);
        assert.equal(reads.length, 2, `one read by the refresh, none by the third call: ${reads.join('\n')}`);
        h.timers.advance(1);
        assert.equal(h.monitor.spendableOf(acct.id), 10_500 - 3 * 120, 'the third call draws on the same wallet');
      } finally {
        stop();
      }
    });
    after(async () => db?.destroy());

    it('cuts both live calls of an account with BILL.0403 within one second of the money running out', async () => {
      const acct = await insertAccount(db, 'Little');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 300 });
      const [a, b] = [await insertCall(db, acct.id, '+254700000001'), await insertCall(db, acct.id, '+254700000002')];
      h = harness(db);
      const t0 = h.timers.now();
      await h.monitor.callAnswered({
        callId: a,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254700000001',
        answeredAt: t0,
      });
      await h.monitor.callAnswered({
        callId: b,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254700000002',
        answeredAt: t0,
      });
      // Two calls at 2 c/s each after a 60 s first block (2 x 120 c): 300 c pays through second 75; the 76th
      // second, started at t0 + 75 s, cannot be paid. That instant is when the money runs out.
      const runsOut = t0 + 75_000;
      h.timers.advance(1);
      assert.equal(h.monitor.spendableOf(acct.id), 60, 'both first blocks are committed at answer');
      await run(h, 80_000);
      assert.equal(h.cuts.length, 2);
      for (const c of h.cuts) {
        assert.equal(c.reason, BillingCodes.walletExhausted);
        assert.ok(c.at > runsOut && c.at <= runsOut + 1000, `cut ${c.at - runsOut} ms after the money ran out`);
      }
      const settled = await Promise.all([h.ended.get(a)!, h.ended.get(b)!]);
      for (const [callId, s] of [
        [a, settled[0]],
        [b, settled[1]],
      ] as const) {
        const rows = await db('wallet_transactions').where({ call_id: callId });
        assert.equal(rows.length, 1, 'one talk row per call');
        assert.equal(rows[0].settlement_key, `call:${callId}:talk`);
        assert.equal(Number(rows[0].amount_cents), s.costCents, 'the call cost is what the ledger holds');
        assert.equal(s.talkSeconds, 76);
      }
      assert.equal(settled[0].costCents + settled[1].costCents, 300);
      assert.equal(await assertChained(db, acct.id), 0);
      const codes = h.events.map((e) => e.code);
      assert.equal(codes.filter((c) => c === BillingCodes.walletLow).length, 1, 'one BILL.0310 warning');
      assert.equal(codes.filter((c) => c === BillingCodes.walletExhausted).length, 2);
      assert.equal(codes.filter((c) => c === BillingCodes.walletDebited).length, 2, 'one BILL.0300 per posted charge');
      assert.deepEqual(h.monitor.liveCallIds(), []);
    });

    it('two nodes sharing the store: live calls of one account on each draw on one balance', async () => {
      const acct = await insertAccount(db, 'Two nodes');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 300 });
      const timers = new ManualClock(FAKE_EPOCH);
      const cuts: Array<{ callId: string; reason: string; at: number }> = [];
      const ended: Array<Promise<CallSettlement>> = [];
      const node = (nodeId: string): CreditMonitor => {
        const m: CreditMonitor = new CreditMonitor({
          db,
          rates: new RateBook(db, { clock: { now: () => timers.now() } }),
          clock: timers,
          nodeId,
          heartbeatPersistMs: 1000,
          balanceRefreshMs: 1000,
          cut: (callId, reason) => {
            cuts.push({ callId, reason, at: timers.now() });
            ended.push(m.callEnded(callId, timers.now()));
          },
          emit: () => undefined,
          logger: quietLog,
        });
        return m;
      };
      const [n1, n2] = [node('n1'), node('n2')];
      try {
        const [a, b] = [await insertCall(db, acct.id, '+254700000011'), await insertCall(db, acct.id, '+254700000012')];
        const t0 = timers.now();
        await n1.callAnswered({
          callId: a,
          accountId: acct.id,
          direction: 'outbound',
          to: '+254700000011',
          answeredAt: t0,
        });
        await n2.callAnswered({
          callId: b,
          accountId: acct.id,
          direction: 'outbound',
          to: '+254700000012',
          answeredAt: t0,
        });
        for (let t = 0; t < 90_000; t += 50) {
          timers.advance(50);
          await Promise.all([n1.drain(), n2.drain()]);
        }
        // Alone, each node would let its call run to 150 s on 300 c. Together the money runs out at 75 s; a node
        // sees the other's consumption one heartbeat plus one balance refresh late (2 s here).
        assert.equal(cuts.length, 2);
        for (const c of cuts) {
          assert.equal(c.reason, BillingCodes.walletExhausted);
          const late = c.at - (t0 + 75_000);
          assert.ok(late > 0 && late <= 2500, `cut ${late} ms after the money ran out`);
        }
        const settled = await Promise.all(ended);
        assert.equal(settled[0].costCents + settled[1].costCents, 300);
        assert.equal(await assertChained(db, acct.id), 0);
      } finally {
        await Promise.all([n1.close(), n2.close()]);
      }
    });

    it('does not cut or warn while the balance covers the calls, and warns once as it nears the end', async () => {
      const acct = await insertAccount(db, 'Plenty');
      // 1 call, 2 c/s: 120 c first block, then 1000 c lasts 440 s more; warn below 60 s left (from t0 + 440 s).
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 1000 });
      const a = await insertCall(db, acct.id, '+254700000003');
      h = harness(db);
      const t0 = h.timers.now();
      await h.monitor.callAnswered({
        callId: a,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254700000003',
        answeredAt: t0,
      });
      await run(h, 435_000, 1000);
      assert.equal(h.cuts.length, 0);
      assert.equal(h.events.length, 0);
      await run(h, 10_000, 250);
      assert.deepEqual(
        h.events.map((e) => e.code),
        [BillingCodes.walletLow],
      );
      const s = await h.monitor.callEnded(a, h.timers.now());
      assert.equal(s.talkSeconds, 445);
      assert.equal(s.costCents, 120 + 385 * 2);
      await assertChained(db, acct.id);
    });

    it('settles exactly once when callEnded is called twice or concurrently, racing another settler', async () => {
      const acct = await insertAccount(db, 'Once');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 10_000 });
      const a = await insertCall(db, acct.id, '+254700000004');
      h = harness(db);
      const t0 = h.timers.now();
      await h.monitor.callAnswered({
        callId: a,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254700000004',
        answeredAt: t0,
      });
      await run(h, 90_000, 1000);
      const end = h.timers.now();
      const results = await Promise.all([
        ...Array.from({ length: 5 }, () => h!.monitor.callEnded(a, end)),
        // another process (a reconcile sweep elsewhere) settling the same call with its own figure
        settleCall(db, { accountId: acct.id, callId: a, talkCents: 999, ttsCents: 0 }),
      ]);
      const again = await h.monitor.callEnded(a, end + 60_000);
      const rows = await db('wallet_transactions').where({ call_id: a });
      assert.equal(rows.length, 1, 'one ledger row for the call');
      assert.equal(rows[0].settlement_key, `call:${a}:talk`);
      const charged = Number(rows[0].amount_cents);
      assert.ok(charged === 180 || charged === 999);
      for (const r of results) assert.equal(r.costCents, charged, 'every settler reports what the ledger holds');
      assert.equal(again.costCents, charged);
      assert.equal(await assertChained(db, acct.id), 10_000 - charged);
      // and a monitor that never held the call answers from the ledger
      const other = harness(db);
      try {
        assert.equal((await other.monitor.callEnded(a, end)).costCents, charged);
      } finally {
        await other.monitor.close();
      }
    });

    it('settles talk and speech under their own keys, speech priced by tier', async () => {
      await setRate(db, 'tts', 3, '', '');
      await setRate(db, 'tts', 10, '', 'premium');
      const acct = await insertAccount(db, 'Speech');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 10_000 });
      const a = await insertCall(db, acct.id, '+254700000005');
      h = harness(db);
      const t0 = h.timers.now();
      await h.monitor.callAnswered({
        callId: a,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254700000005',
        answeredAt: t0,
      });
      h.monitor.ttsUsed(a, 4.2); // 5 s x 3 c
      h.monitor.ttsUsed(a, 2, 'premium'); // 2 s x 10 c
      await run(h, 10_000, 1000);
      const s = await h.monitor.callEnded(a, h.timers.now());
      assert.deepEqual(
        { talk: s.talkCents, tts: s.ttsCents, cost: s.costCents, ttsSeconds: s.ttsSeconds },
        { talk: 120, tts: 35, cost: 155, ttsSeconds: 7 },
      );
      const rows = await db('wallet_transactions').where({ call_id: a }).orderBy('seq');
      assert.deepEqual(
        rows.map((r) => [r.kind, r.settlement_key, Number(r.amount_cents)]),
        [
          ['call', `call:${a}:talk`, 120],
          ['tts', `call:${a}:tts`, 35],
        ],
      );
      await db('rates').where({ kind: 'tts' }).delete();
    });
  });
}

describe('billing/credit-monitor timing', function () {
  this.timeout(30000);
  let db: Db;
  let h: Harness | undefined;
  before(async () => {
    db = await sqliteDb.open();
    await setRate(db, 'outbound', 120, '254');
  });
  afterEach(async () => {
    await h?.monitor.close();
    h = undefined;
  });
  after(async () => db?.destroy());

  const heartbeatOf = async (callId: string) =>
    Date.parse((await db('call_credit').where({ call_id: callId }).first()).heartbeat_at);

  async function richCall(maxCallSeconds = 14_400): Promise<{ acct: string; call: string; t0: number }> {
    const acct = await insertAccount(db, 'Rich');
    await db('accounts').where({ id: acct.id }).update({ max_call_seconds: maxCallSeconds });
    await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 1_000_000 });
    const call = await insertCall(db, acct.id, '+254711000000');
    h = harness(db, { endOnCut: false });
    const t0 = h.timers.now();
    await h.monitor.callAnswered({
      callId: call,
      accountId: acct.id,
      direction: 'outbound',
      to: '+254711000000',
      answeredAt: t0,
    });
    return { acct: acct.id, call, t0 };
  }

  it('the watchdog cuts guarded calls with END.0503 when the monitor tick stalls', async () => {
    const { call } = await richCall();
    await run(h!, 10_000, 100);
    assert.equal(h!.cuts.length, 0, 'a ticking monitor is not cut');
    h!.timers.stall('credit-tick');
    const stalledAt = h!.timers.now();
    await run(h!, 2900, 100);
    assert.equal(h!.cuts.length, 0, 'not before the stall limit (3 s)');
    await run(h!, 1000, 100);
    assert.deepEqual(
      h!.cuts.map((c) => [c.callId, c.reason]),
      [[call, BillingCodes.watchdogCut]],
    );
    assert.ok(h!.cuts[0].at - stalledAt <= 3500, 'cut within the stall limit plus one watchdog check');
    await run(h!, 4000, 500);
    assert.equal(h!.cuts.length, 1, 'cut once');
  });

  it('cuts a call at the account maximum duration with END.0408', async () => {
    const { call, t0 } = await richCall(5);
    await run(h!, 4900, 50);
    assert.equal(h!.cuts.length, 0);
    await run(h!, 400, 50);
    assert.deepEqual(
      h!.cuts.map((c) => [c.callId, c.reason]),
      [[call, BillingCodes.maxDuration]],
    );
    assert.ok(h!.cuts[0].at - t0 >= 5000 && h!.cuts[0].at - t0 <= 5250);
  });

  it('cuts again a call still live 5 s after its cut (a lost BYE), and stops once it ends', async () => {
    const { call } = await richCall(2);
    await run(h!, 2250, 250);
    assert.equal(h!.cuts.length, 1);
    await run(h!, 5000, 250);
    assert.deepEqual(
      h!.cuts.map((c) => c.reason),
      [BillingCodes.maxDuration, BillingCodes.maxDuration],
    );
    await h!.monitor.callEnded(call, h!.timers.now());
    await run(h!, 10_000, 500);
    assert.equal(h!.cuts.length, 2);
  });

  it('an end reported while the answer is still being recorded waits for it, leaving nothing live', async () => {
    const acct = await insertAccount(db, 'Quick');
    await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 10_000 });
    const call = await insertCall(db, acct.id, '+254711000001');
    h = harness(db, { endOnCut: false });
    const t0 = h.timers.now();
    const answering = h.monitor.callAnswered({
      callId: call,
      accountId: acct.id,
      direction: 'outbound',
      to: '+254711000001',
      answeredAt: t0,
    });
    h.monitor.ttsUsed(call, 2);
    const s = await h.monitor.callEnded(call, t0 + 1500);
    await answering;
    assert.deepEqual([s.talkSeconds, s.costCents], [2, 120]);
    assert.deepEqual(h.monitor.liveCallIds(), []);
    assert.equal(await db('call_credit').where({ call_id: call }).first(), undefined);
  });

  it('a call the reconcile sweep settled elsewhere stops drawing on the balance at the next heartbeat', async () => {
    const { call, t0 } = await richCall();
    await run(h!, 6000, 250);
    assert.ok(
      await eventually(async () => {
        const row = await db('call_credit').where({ call_id: call }).first();
        return Date.parse(row.heartbeat_at) === t0 + 5000;
      }),
      'heartbeat written at 5 s',
    );
    const closed = await reconcileCall(db, call, h!.timers.now());
    assert.deepEqual(
      [closed?.callId, closed?.talkSeconds, closed?.costCents],
      [call, 5, 120],
      'billed to the heartbeat',
    );
    assert.deepEqual(h!.monitor.liveCallIds(), [call], 'not yet noticed');
    await run(h!, 4000, 250); // the next heartbeat (10 s) finds the credit row gone
    assert.ok(await eventually(() => h!.monitor.liveCallIds().length === 0), 'released');
    const again = await h!.monitor.callEnded(call, h!.timers.now());
    assert.equal(again.costCents, 120, 'a late end reports what the ledger holds');
    assert.equal((await db('wallet_transactions').where({ call_id: call })).length, 1);
  });

  it('writes heartbeats for live calls and forgets the credit row once settled; close() clears its timers', async () => {
    const { call, t0 } = await richCall();
    await run(h!, 5000, 250);
    assert.ok(await eventually(async () => (await heartbeatOf(call)) === t0 + 5000));
    await run(h!, 7000, 250);
    assert.ok(await eventually(async () => (await heartbeatOf(call)) >= t0 + 10_000), 'the next one by 10 s');
    const row = await db('call_credit').where({ call_id: call }).first();
    assert.equal(Number(row.rate_cents_per_minute), 120);
    await h!.monitor.callEnded(call, h!.timers.now());
    assert.equal(await db('call_credit').where({ call_id: call }).first(), undefined);
    await h!.monitor.close();
    await h!.monitor.close();
    assert.deepEqual(h!.timers.periodicJobs(), []);
  });
});
