import assert from 'node:assert/strict';
import fc from 'fast-check';
import { roomLogger } from '../../config/index.js';
import { ReasonCodes } from '../../events/index.js';
import { CreditMonitor, RateBook, cdrSeconds, post } from '../../billing/index.js';
import { insertAccount, insertCall, nowIso, setRate, type Db } from '../../store/index.js';
import { CallLifecycle } from '../../calls/lifecycle.js';
import { CallTeardown } from '../../calls/call-teardown.js';
import { ManualClock } from '../../kit/index.js';
import { sqliteDb } from '../support/db.js';
import { quietLog } from '../billing/fake-timers.js';
import { CALL_EPOCH, FakeMedia, fakeEvents } from './fakes.js';

/**
 * A CDR's two lengths (docs/api.md, "Calls"): `duration_seconds` from the start to the end and `talk_seconds` from
 * the answer to the end, both in whole seconds rounded up, so talk time never exceeds the call's length.
 */
describe('calls: duration and talk time of a CDR', () => {
  it('talk time never exceeds duration, for any start, answer and end instants (the rounding alone)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 ** 12 }),
        fc.option(fc.integer({ min: -5_000, max: 600_000 }), { nil: null }),
        fc.integer({ min: -5_000, max: 600_000 }),
        (startedMs, answerAfter, endAfter) => {
          const answeredMs = answerAfter === null ? null : startedMs + answerAfter;
          const s = cdrSeconds({ startedMs, answeredMs, endedMs: startedMs + endAfter });
          assert.ok(Number.isInteger(s.durationSeconds) && Number.isInteger(s.talkSeconds));
          assert.ok(s.talkSeconds >= 0 && s.talkSeconds <= s.durationSeconds, JSON.stringify(s));
          assert.equal(s.durationSeconds, Math.ceil(Math.max(0, endAfter) / 1000), 'duration: rounded up');
          if (answeredMs === null) assert.equal(s.talkSeconds, 0);
        },
      ),
    );
  });

  describe('through the lifecycle, the teardown and the credit monitor on the store', () => {
    let db: Db;
    let accountId: string;
    const log = roomLogger('calls');

    before(async () => {
      db = await sqliteDb.open();
      await setRate(db, 'inbound', 60);
      accountId = (await insertAccount(db, 'Lengths')).id;
      await post(db, { accountId, direction: 'credit', kind: 'topup', amountCents: 10_000_000 });
    });
    after(async () => db?.destroy());

    it('every ended call has talk_seconds <= duration_seconds, and the CDR shows the talk time billed', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 3_000 }),
          fc.integer({ min: 0, max: 20_000 }),
          async (answerAfterMs, talkMs) => {
            const clock = new ManualClock(CALL_EPOCH);
            const monitor = new CreditMonitor({
              db,
              rates: new RateBook(db, { clock }),
              clock,
              cut: () => undefined,
              emit: () => undefined,
              logger: quietLog,
            });
            try {
              const row = await insertCall(db, {
                account_id: accountId,
                direction: 'inbound',
                from_number: '+254733000001',
                to_number: '+254711000001',
                started_at: nowIso(new Date(clock.now())),
              });
              const life = new CallLifecycle({ db, events: fakeEvents([]), log }, row);
              const teardown = new CallTeardown({ life, media: new FakeMedia([]), log, clock, billing: monitor });
              clock.advance(answerAfterMs);
              await life.answered(new Date(clock.now()));
              await monitor.callAnswered({
                callId: row.id,
                accountId,
                direction: 'inbound',
                to: row.to_number,
                answeredAt: new Date(life.row.answered_at!),
              });
              clock.advance(talkMs);
              const ended = await teardown.end(ReasonCodes.normalHangup);
              const detail = `answer after ${answerAfterMs} ms, talk ${talkMs} ms: ${ended.duration_seconds} / ${ended.talk_seconds}`;
              assert.ok(ended.talk_seconds! <= ended.duration_seconds!, detail);
              assert.equal(ended.duration_seconds, Math.ceil((answerAfterMs + talkMs) / 1000), detail);
              assert.equal(ended.talk_seconds, Math.ceil(talkMs / 1000), detail);
            } finally {
              await monitor.close();
            }
          },
        ),
        { numRuns: 40 },
      );
    });
  });
});
