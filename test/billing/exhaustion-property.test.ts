import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CreditMonitor,
  RateBook,
  post,
  billableSeconds,
  talkCents,
  BillingCodes,
  type CallSettlement,
} from '../../billing/index.js';
import { insertAccount, getAccount, setRate, newId, newCallSid, nowIso, type Db } from '../../store/index.js';
import { sqliteDb } from '../support/db.js';
import { FAKE_EPOCH, quietLog } from './fake-timers.js';
import { ManualClock } from '../../kit/index.js';

const INC = { initialSeconds: 60, incrementSeconds: 1 };

describe('billing: properties', function () {
  this.timeout(120000);

  it('billable time covers the talk time by less than one increment after the first block', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 10_000 }),
        (talk, initialSeconds, incrementSeconds, rate) => {
          const inc = { initialSeconds, incrementSeconds };
          const b = billableSeconds(talk, inc);
          if (talk === 0) return b === 0;
          if (b < talk || b < initialSeconds) return false;
          if (talk > initialSeconds && b - talk >= incrementSeconds) return false;
          // more talk never costs less, and cents are whole and rounded up
          const c = talkCents(rate, talk, inc);
          return Number.isInteger(c) && c >= (b * rate) / 60 && c <= talkCents(rate, talk + 1, inc);
        },
      ),
      { numRuns: 2000 },
    );
  });

  describe('exhaustion on SQLite', () => {
    let db: Db;
    before(async () => {
      db = await sqliteDb.open();
      await setRate(db, 'outbound', 60, '2541'); // 1 c/s
      await setRate(db, 'outbound', 180, '2542'); // 3 c/s
    });
    after(async () => db?.destroy());

    it('any mix of calls and balance: all cut within 1 s of the money running out, ledger = costs, never negative', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 800 }),
          fc.array(fc.record({ at: fc.integer({ min: 0, max: 20_000 }), pricey: fc.boolean() }), {
            minLength: 1,
            maxLength: 4,
          }),
          async (balance, calls) => {
            const acct = await insertAccount(db, 'Prop');
            await post(db, { accountId: acct.id, direction: 'credit', kind: 'topup', amountCents: balance });
            const timers = new ManualClock(FAKE_EPOCH);
            const t0 = timers.now();
            const cuts: Array<{ id: string; reason: string; at: number }> = [];
            const ended = new Map<string, Promise<CallSettlement>>();
            const monitor: CreditMonitor = new CreditMonitor({
              db,
              rates: new RateBook(db, { clock: { now: () => timers.now() } }),
              clock: timers,
              cut: (id, reason) => {
                cuts.push({ id, reason, at: timers.now() });
                ended.set(id, monitor.callEnded(id, timers.now()));
              },
              emit: () => undefined,
              logger: quietLog,
            });
            const plan = calls.map((c) => ({ ...c, id: newId(), rate: c.pricey ? 180 : 60 }));
            for (const p of plan) {
              await db('calls').insert({
                id: p.id,
                sid: newCallSid(),
                account_id: acct.id,
                direction: 'outbound',
                from_number: '+254700000000',
                to_number: p.pricey ? '+254200' : '+254100',
                status: 'answered',
                created_at: nowIso(new Date(FAKE_EPOCH)),
              });
            }
            // The instant the money runs out: the first ms at which the answered calls' committed cents exceed it.
            const committed = (t: number) =>
              plan
                .filter((p) => p.at <= t)
                .reduce((sum, p) => sum + talkCents(p.rate, Math.ceil((t - p.at) / 1000), INC), 0);
            let runsOut = 0;
            while (committed(runsOut) <= balance) runsOut++;
            const answeredIds: string[] = [];
            try {
              const pending = [...plan].sort((a, b) => a.at - b.at);
              // Run until every call has had its second to be cut: the last may be answered long after the money ran out.
              const until = Math.max(runsOut, ...plan.map((p) => p.at)) + 3000;
              while (timers.now() - t0 < until) {
                while (pending.length && pending[0].at <= timers.now() - t0) {
                  const p = pending.shift()!;
                  answeredIds.push(p.id);
                  await monitor.callAnswered({
                    callId: p.id,
                    accountId: acct.id,
                    direction: 'outbound',
                    to: p.pricey ? '+254200' : '+254100',
                    answeredAt: t0 + p.at,
                  });
                }
                timers.advance(50);
                await monitor.drain();
              }
              // Every call answered is cut: those live when the money ran out within 1 s of it, those answered
              // on the empty wallet afterwards within 1 s of their answer.
              assert.deepEqual(cuts.map((c) => c.id).sort(), answeredIds.sort(), 'every answered call is cut');
              for (const c of cuts) {
                assert.equal(c.reason, BillingCodes.walletExhausted);
                const from = Math.max(runsOut, plan.find((p) => p.id === c.id)!.at);
                const late = c.at - t0 - from;
                assert.ok(late >= 0 && late <= 1000, `cut ${late} ms after the money ran out`);
              }
              const rows = await db('wallet_transactions').where({ account_id: acct.id, kind: 'call' });
              for (const [id, p] of ended) {
                const mine = rows.filter((r) => r.call_id === id);
                assert.equal(mine.length, 1, 'one talk row per call');
                assert.equal(mine[0].settlement_key, `call:${id}:talk`);
                assert.equal(Number(mine[0].amount_cents), (await p).costCents, 'call cost = ledger');
              }
              const ledgerSum = rows.reduce((s, r) => s + Number(r.amount_cents), 0);
              const after = (await getAccount(db, acct.id)).balance_cents;
              assert.ok(after >= 0);
              assert.equal(after, balance - ledgerSum);
            } finally {
              await monitor.close();
            }
          },
        ),
        { numRuns: 12 },
      );
    });
  });
});
