import assert from 'node:assert/strict';
import { CreditMonitor, RateBook, ReconcileSweep, post, BillingCodes, formatMoney } from '../../billing/index.js';
import { insertAccount, getAccount, setRate, newId, newCallSid, nowIso, type Db } from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';
import { FAKE_EPOCH, quietLog } from './fake-timers.js';
import { ManualClock } from '../../kit/index.js';

type Status = 'initiated' | 'ringing' | 'answered' | 'completed';

async function insertCall(
  db: Db,
  accountId: string,
  o: { status: Status; nodeId: string; createdAt: number; answeredAt?: number },
): Promise<string> {
  const id = newId();
  await db('calls').insert({
    id,
    sid: newCallSid(),
    account_id: accountId,
    direction: 'outbound',
    from_number: '+254700000000',
    to_number: '+254722000000',
    status: o.status,
    node_id: o.nodeId,
    created_at: nowIso(new Date(o.createdAt)),
    started_at: nowIso(new Date(o.createdAt)),
    answered_at: o.answeredAt ? nowIso(new Date(o.answeredAt)) : null,
  });
  return id;
}

for (const kind of BOTH_DBS) {
  describe(`billing/reconcile on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
      await setRate(db, 'outbound', 120, '254'); // 2 c/s after a 60 s first block
      await setRate(db, 'tts', 3);
    });
    after(async () => db?.destroy());

    it('closes rows a crashed process left live with END.0504 once, bills once, reports once', async () => {
      const timers = new ManualClock(FAKE_EPOCH);
      const acct = await insertAccount(db, 'Crashed');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 10_000 });
      const t0 = timers.now();
      const answered = await insertCall(db, acct.id, {
        status: 'answered',
        nodeId: 'n1',
        createdAt: t0 - 5000,
        answeredAt: t0,
      });
      const ringing = await insertCall(db, acct.id, { status: 'ringing', nodeId: 'n1', createdAt: t0 });
      const unwatched = await insertCall(db, acct.id, {
        status: 'answered',
        nodeId: 'n1',
        createdAt: t0,
        answeredAt: t0,
      });
      const otherNode = await insertCall(db, acct.id, {
        status: 'answered',
        nodeId: 'n2',
        createdAt: t0,
        answeredAt: t0,
      });
      const stillLive = await insertCall(db, acct.id, {
        status: 'answered',
        nodeId: 'n1',
        createdAt: t0,
        answeredAt: t0,
      });
      const done = await insertCall(db, acct.id, { status: 'completed', nodeId: 'n1', createdAt: t0 });

      // The process that held `answered` runs its monitor for 92 s (heartbeats every 5 s) and dies.
      const crashed = new CreditMonitor({
        db,
        rates: new RateBook(db, { clock: { now: () => timers.now() } }),
        clock: timers,
        nodeId: 'n1',
        cut: () => assert.fail('nothing to cut'),
        emit: () => undefined,
        logger: quietLog,
      });
      await crashed.callAnswered({
        callId: answered,
        accountId: acct.id,
        direction: 'outbound',
        to: '+254722000000',
        answeredAt: t0,
      });
      crashed.ttsUsed(answered, 3.5); // 4 s x 3 c
      for (let i = 0; i < 92; i++) {
        timers.advance(1000);
        await crashed.drain();
      }
      await crashed.close(); // the store now holds what a crash leaves: live rows, the last heartbeat written
      const credit = await db('call_credit').where({ call_id: answered }).first();
      assert.equal(Date.parse(credit.heartbeat_at), t0 + 90_000, 'heartbeats every 5 s');
      const billedSeconds = 90;

      timers.advance(60_000); // restart a minute later
      const detectedAt = timers.now();
      const events: Array<{ code: string; data: Record<string, unknown> }> = [];
      const sweep = new ReconcileSweep({
        db,
        nodeId: 'n1',
        clock: timers,
        isLive: (id) => id === stillLive,
        emit: (_a, code, data) => events.push({ code, data }),
      });
      const closed = await sweep.start();
      assert.deepEqual(closed.map((c) => c.callId).sort(), [answered, ringing, unwatched].sort());

      const row = async (id: string) => db('calls').where({ id }).first();
      const a = await row(answered);
      assert.equal(a.status, 'completed');
      assert.equal(a.reason_code, 'END.0504');
      assert.equal(a.reason_label, 'Reconciled from the switch');
      assert.equal(a.ended_at, nowIso(new Date(detectedAt)), 'ended_at is the detection time');
      assert.equal(a.talk_seconds, billedSeconds, 'billed from answer to the last heartbeat');
      const talk = 120 + (billedSeconds - 60) * 2;
      assert.equal(Number(a.cost_cents), talk + 12);
      const ledger = await db('wallet_transactions').where({ call_id: answered }).orderBy('seq');
      assert.deepEqual(
        ledger.map((r) => [r.settlement_key, Number(r.amount_cents)]),
        [
          [`call:${answered}:talk`, talk],
          [`call:${answered}:tts`, 12],
        ],
      );
      assert.equal(await db('call_credit').where({ call_id: answered }).first(), undefined);

      const r = await row(ringing);
      assert.deepEqual(
        [r.status, r.reason_code, Number(r.cost_cents), r.talk_seconds],
        ['failed', 'END.0504', 0, null],
      );
      const u = await row(unwatched);
      assert.deepEqual(
        [u.status, u.reason_code, Number(u.cost_cents), u.talk_seconds],
        ['completed', 'END.0504', 0, 0],
        'answered but never seen by a monitor: closed at no charge',
      );
      for (const id of [otherNode, stillLive]) assert.equal((await row(id)).status, 'answered');
      assert.equal((await row(done)).reason_code, null);

      const byCode = (c: string) => events.filter((e) => e.code === c);
      assert.deepEqual(
        byCode(BillingCodes.callCompleted)
          .map((e) => e.data.callId)
          .sort(),
        [answered, unwatched].sort(),
      );
      assert.deepEqual(
        byCode(BillingCodes.callFailed).map((e) => e.data.callId),
        [ringing],
      );
      for (const e of [...byCode(BillingCodes.callCompleted), ...byCode(BillingCodes.callFailed)])
        assert.equal(e.data.reasonCode, 'END.0504');
      assert.equal(
        byCode(BillingCodes.callCompleted).find((e) => e.data.callId === answered)?.data.cost,
        formatMoney(talk + 12),
      );
      assert.equal(byCode(BillingCodes.walletDebited).length, 2);
      assert.equal((await getAccount(db, acct.id)).balance_cents, 10_000 - talk - 12);

      // A second sweep, later, changes nothing more.
      const snapshot = JSON.stringify(await db('calls').where({ account_id: acct.id }).orderBy('id'));
      const ledgerCount = (await db('wallet_transactions').where({ account_id: acct.id })).length;
      timers.advance(45_000);
      assert.deepEqual(await sweep.runOnce(), []);
      assert.equal(JSON.stringify(await db('calls').where({ account_id: acct.id }).orderBy('id')), snapshot);
      assert.equal((await db('wallet_transactions').where({ account_id: acct.id })).length, ledgerCount);
      assert.equal(events.length, 5);
      await sweep.close();
    });

    it('two sweeps racing over the same orphans close, bill and report each call once', async () => {
      const timers = new ManualClock(FAKE_EPOCH);
      const acct = await insertAccount(db, 'Race');
      await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 100_000 });
      const t0 = timers.now();
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const id = await insertCall(db, acct.id, { status: 'answered', nodeId: 'box', createdAt: t0, answeredAt: t0 });
        await db('call_credit').insert({
          call_id: id,
          account_id: acct.id,
          node_id: 'box',
          rate_cents_per_minute: 120,
          answered_at: nowIso(new Date(t0)),
          heartbeat_at: nowIso(new Date(t0 + 70_000)),
        });
        ids.push(id);
      }
      timers.advance(100_000);
      const events: string[] = [];
      const mk = () =>
        new ReconcileSweep({
          db,
          nodeId: null, // one box: any node's rows
          clock: timers,
          isLive: () => false,
          emit: (_a, code, data) => events.push(`${code}:${String(data.callId)}`),
        });
      const [s1, s2] = [mk(), mk()];
      const [c1, c2] = await Promise.all([s1.runOnce({ minAgeMs: 0 }), s2.runOnce({ minAgeMs: 0 })]);
      // (the earlier test's other-node and still-live rows are orphans too for a one-box sweep)
      const mine = [...c1, ...c2].map((c) => c.callId).filter((id) => ids.includes(id));
      assert.deepEqual(mine.sort(), [...ids].sort(), 'each call closed by exactly one sweep');
      const ledger = await db('wallet_transactions').whereIn('call_id', ids);
      assert.equal(ledger.length, 8);
      for (const r of ledger) assert.equal(Number(r.amount_cents), 140); // 70 s: 120 c + 10 x 2 c
      assert.equal(events.filter((e) => ids.some((id) => e === `${BillingCodes.callCompleted}:${id}`)).length, 8);
      assert.equal(new Set(events).size, events.length, 'no event reported twice');
      await Promise.all([s1.close(), s2.close()]);
    });

    it('a periodic sweep leaves a call younger than its minimum age alone (it may be in set-up)', async () => {
      const timers = new ManualClock(FAKE_EPOCH);
      const acct = await insertAccount(db, 'Young');
      const young = await insertCall(db, acct.id, {
        status: 'initiated',
        nodeId: 'n9',
        createdAt: timers.now() - 2000,
      });
      const sweep = new ReconcileSweep({
        db,
        nodeId: 'n9',
        clock: timers,
        isLive: () => false,
        emit: () => undefined,
        minAgeMs: 10_000,
      });
      assert.deepEqual(await sweep.runOnce(), []);
      timers.advance(9000);
      assert.deepEqual(
        (await sweep.runOnce()).map((c) => c.callId),
        [young],
      );
      await sweep.close();
    });
  });
}
