import assert from 'node:assert/strict';
import {
  CreditMonitor,
  RateBook,
  post,
  BillingCodes,
  secondsUntilCut,
  type CreditWarning,
} from '../../billing/index.js';
import { insertAccount, setRate, newId, newCallSid, nowIso, type Db } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { FAKE_EPOCH, quietLog } from './fake-timers.js';
import { ManualClock } from '../../kit/index.js';

/** Warn, then cut (issue 23, item 1) on the credit monitor's fake clock. */
describe('billing: the credit warning before the cut', function () {
  this.timeout(60000);
  let db: Db;
  let monitor: CreditMonitor | undefined;
  before(async () => {
    db = await sqliteDb.open();
    await setRate(db, 'outbound', 100, '254'); // 1.00 KES a minute: 60 s first block 100 c, then 5/3 c a second
  });
  afterEach(async () => monitor?.close());
  after(async () => db?.destroy());

  async function answeredCall(accountId: string, clock: ManualClock): Promise<string> {
    const id = newId();
    await db('calls').insert({
      id,
      sid: newCallSid(),
      account_id: accountId,
      direction: 'outbound',
      from_number: '+254700000000',
      to_number: '+254700000001',
      status: 'answered',
      created_at: nowIso(new Date(clock.now())),
      answered_at: nowIso(new Date(clock.now())),
    });
    await monitor!.callAnswered({
      callId: id,
      accountId,
      direction: 'outbound',
      to: '+254700000001',
      answeredAt: clock.now(),
    });
    return id;
  }

  function start(clock: ManualClock) {
    const warnings: Array<{ callId: string; w: CreditWarning; at: number }> = [];
    const cuts: Array<{ callId: string; at: number }> = [];
    const events: string[] = [];
    monitor = new CreditMonitor({
      db,
      rates: new RateBook(db, { clock: { now: () => clock.now() } }),
      clock,
      cut: (callId) => {
        cuts.push({ callId, at: clock.now() });
        void monitor!.callEnded(callId, clock.now());
      },
      warn: (callId, w) => warnings.push({ callId, w, at: clock.now() }),
      emit: (_a, code) => events.push(code),
      logger: quietLog,
    });
    return { warnings, cuts, events };
  }

  async function run(clock: ManualClock, ms: number): Promise<void> {
    for (let t = 0; t < ms; t += 250) {
      clock.advance(250);
      await monitor!.drain();
    }
  }

  it('a call with 90 s of allowance is warned once, 60 s before it is cut, and the warning is on the stream', async () => {
    const acct = await insertAccount(db, 'Ninety');
    await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 150 }); // 90 s at 1.00/min
    const clock = new ManualClock(FAKE_EPOCH);
    const seen = start(clock);
    const t0 = clock.now();
    const call = await answeredCall(acct.id, clock);
    await run(clock, 95_000);
    assert.equal(seen.warnings.length, 1, 'warned once');
    assert.equal(seen.warnings[0]!.callId, call);
    assert.equal(seen.warnings[0]!.w.leadSeconds, 60);
    assert.equal(seen.warnings[0]!.w.language, 'en');
    assert.equal(seen.cuts.length, 1);
    const warnedAt = seen.warnings[0]!.at - t0;
    const cutAt = seen.cuts[0]!.at - t0;
    assert.ok(cutAt > 90_000 && cutAt <= 91_000, `cut at ${cutAt} ms`);
    const before = cutAt - warnedAt;
    assert.ok(before >= 59_000 && before <= 61_000, `warned ${before} ms before the cut`);
    assert.ok(seen.events.includes(BillingCodes.creditWarning), `BILL.0311 in ${seen.events}`);
    assert.ok(seen.events.indexOf(BillingCodes.creditWarning) < seen.events.indexOf(BillingCodes.walletExhausted));
  });

  it("the account's lead time is honoured (20 s), and 0 turns the warning off", async () => {
    const acct = await insertAccount(db, 'Twenty');
    await db('accounts').where({ id: acct.id }).update({ credit_warning_seconds: 20, language: 'sw' });
    await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: 150 });
    const clock = new ManualClock(FAKE_EPOCH);
    let seen = start(clock);
    const t0 = clock.now();
    await answeredCall(acct.id, clock);
    await run(clock, 95_000);
    assert.equal(seen.warnings.length, 1);
    assert.equal(seen.warnings[0]!.w.language, 'sw');
    const before = seen.cuts[0]!.at - seen.warnings[0]!.at;
    assert.ok(before >= 19_000 && before <= 21_000, `warned ${before} ms before the cut (t0 ${t0})`);
    await monitor!.close();

    const off = await insertAccount(db, 'Off');
    await db('accounts').where({ id: off.id }).update({ credit_warning_seconds: 0 });
    await post(db, { accountId: off.id, direction: 'credit', kind: 'topup', amountCents: 150 });
    const clock2 = new ManualClock(FAKE_EPOCH);
    seen = start(clock2);
    await answeredCall(off.id, clock2);
    await run(clock2, 95_000);
    assert.equal(seen.cuts.length, 1, 'still cut at zero');
    assert.equal(seen.warnings.length, 0, 'never warned');
  });

  it('secondsUntilCut finds the first second the commitment exceeds the balance, Infinity past the horizon', () => {
    // 1 cent a second from now: a balance of 30 is exceeded at second 31.
    const at = (ms: number) => Math.ceil(ms / 1000);
    assert.equal(secondsUntilCut(at, 30, 0, 60), 31);
    assert.equal(secondsUntilCut(at, 30, 0, 20), Infinity);
    assert.equal(secondsUntilCut(at, -1, 0, 20), 0);
  });
});
