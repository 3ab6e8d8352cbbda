import assert from 'node:assert/strict';
import {
  callSeries,
  insertAccount,
  insertAudit,
  listAudit,
  migrate,
  newCallSid,
  newId,
  nextRollUpHour,
  rollUpCallStats,
  topDestinations,
  webhookFailureSeries,
  type Db,
} from '../../store/index.js';
import { migrationSource } from '../../store/migrations/index.js';
import { chartData, chartWindow, StatsRollup } from '../../api/index.js';
import { BOTH_DBS } from '../support/db.js';

const H = (iso: string) => iso; // readability

/** The charts' roll-up (issue 21) against hand-counted CDRs, on both stores. */
for (const kind of BOTH_DBS) {
  describe(`store: call stats roll-up on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    let a: string;
    let b: string;
    before(async () => {
      db = await kind.open();
      a = (await insertAccount(db, 'A')).id;
      b = (await insertAccount(db, 'B')).id;
    });
    after(async () => db?.destroy());

    const call = (o: {
      account: string;
      at: string;
      to?: string;
      direction?: string;
      answered?: boolean;
      talk?: number;
      cost?: number;
      live?: boolean;
    }) =>
      db('calls').insert({
        id: newId(),
        sid: newCallSid(),
        account_id: o.account,
        direction: o.direction ?? 'outbound',
        from_number: '+254711000001',
        to_number: o.to ?? '+254722000001',
        status: o.live ? 'answered' : o.answered ? 'completed' : 'failed',
        talk_seconds: o.answered ? (o.talk ?? 0) : null,
        duration_seconds: o.live ? null : (o.talk ?? 0) + 2,
        cost_cents: o.cost ?? 0,
        answered_at: o.answered || o.live ? o.at : null,
        ended_at: o.live ? null : o.at,
        created_at: o.at,
      });

    it('counts calls, answers, talk time and spend per hour and day, per account and across accounts', async () => {
      await call({ account: a, at: '2026-03-01T10:05:00.000Z', answered: true, talk: 60, cost: 100 });
      await call({ account: a, at: '2026-03-01T10:55:00.000Z', answered: false });
      await call({
        account: a,
        at: '2026-03-01T11:00:00.000Z',
        answered: true,
        talk: 30,
        cost: 50,
        to: '+447700900001',
      });
      await call({
        account: b,
        at: '2026-03-01T10:30:00.000Z',
        answered: true,
        talk: 10,
        cost: 20,
        direction: 'inbound',
      });
      await call({ account: a, at: '2026-03-02T09:00:00.000Z', answered: true, talk: 120, cost: 200 });
      await rollUpCallStats(db, '2026-03-01T00');
      const w = { from: '2026-03-01T00:00:00.000Z', to: '2026-03-03T00:00:00.000Z' };
      const hours = await callSeries(db, { ...w, accountId: a, bucket: 'hour' });
      assert.deepEqual(hours, [
        { bucket: '2026-03-01T10', calls: 2, answered: 1, talk_seconds: 60, cost_cents: 100 },
        { bucket: '2026-03-01T11', calls: 1, answered: 1, talk_seconds: 30, cost_cents: 50 },
        { bucket: '2026-03-02T09', calls: 1, answered: 1, talk_seconds: 120, cost_cents: 200 },
      ]);
      const days = await callSeries(db, { ...w, accountId: null, bucket: 'day' });
      assert.deepEqual(
        days.map((d) => [d.bucket, d.calls, d.answered, d.cost_cents]),
        [
          ['2026-03-01', 4, 3, 170],
          ['2026-03-02', 1, 1, 200],
        ],
      );
      const dest = await topDestinations(db, { ...w, accountId: a });
      assert.deepEqual(
        dest.map((d) => [d.prefix, d.calls, d.answered]),
        [
          ['+2547', 3, 2],
          ['+4477', 1, 1],
        ],
      );
      // The window is [from, to): the next day alone holds one call.
      const one = await callSeries(db, {
        from: '2026-03-02T00:00:00.000Z',
        to: H('2026-03-02T10:00:00.000Z'),
        accountId: a,
        bucket: 'day',
      });
      assert.equal(one[0]?.calls, 1);
    });

    it('leaves a live call out until it ends, then counts it in the hour it was made (the job finds its hour)', async () => {
      await db('platform_settings').where({ key: 'call_stats_rolled_hour' }).delete();
      const job = new StatsRollup(db);
      await job.runOnce(); // first run: everything
      const at = new Date(Date.now() - 3 * 3600_000).toISOString();
      await call({ account: b, at, live: true, to: '+255700000001' });
      await job.runOnce();
      const w = {
        from: new Date(Date.now() - 6 * 3600_000).toISOString(),
        to: new Date(Date.now() + 3600_000).toISOString(),
      };
      assert.deepEqual(await callSeries(db, { ...w, accountId: b, bucket: 'hour' }), []);
      // The job's last hour is now; the live call's older hour is still where the next run starts.
      assert.equal(await nextRollUpHour(db, new Date().toISOString().slice(0, 13)), at.slice(0, 13));
      await db('calls')
        .where({ account_id: b, status: 'answered' })
        .update({ status: 'completed', ended_at: new Date().toISOString(), talk_seconds: 40, cost_cents: 70 });
      await job.runOnce();
      const s = await callSeries(db, { ...w, accountId: b, bucket: 'hour' });
      assert.deepEqual(
        s.map((p) => [p.bucket, p.calls, p.talk_seconds, p.cost_cents]),
        [[at.slice(0, 13), 1, 40, 70]],
      );
    });

    it('counts failed status callbacks per bucket; chartData sums the window; bad windows are refused', async () => {
      const at = '2026-03-01T10:10:00.000Z';
      const row = (state: string) => ({
        id: newId(),
        account_id: a,
        event: 'call.completed',
        url: 'https://x.example',
        body: '{}',
        attempts: 8,
        state,
        next_attempt_at: at,
        created_at: at,
        done_at: at,
      });
      await db('event_outbox').insert([row('failed'), row('failed'), row('delivered')]);
      const w = { from: '2026-03-01T00:00:00.000Z', to: '2026-03-02T00:00:00.000Z', accountId: a };
      assert.deepEqual(await webhookFailureSeries(db, { ...w, bucket: 'hour' }), [
        { bucket: '2026-03-01T10', failures: 2 },
      ]);
      const d = await chartData(db, chartWindow({ from: w.from, to: w.to }, a));
      assert.equal(d.totals.calls, 3);
      assert.equal(d.totals.webhook_failures, 2);
      assert.ok(Math.abs(d.totals.answer_rate! - 2 / 3) < 1e-9);
      assert.equal(d.totals.average_talk_seconds, 45);
      assert.throws(() => chartWindow({ days: '365' }, a), /days must be/);
      assert.throws(() => chartWindow({ from: 'yesterday', to: 'now' }, a), /ISO/);
      assert.throws(() => chartWindow({ days: '7', bucket: 'minute' }, a), /bucket/);
    });

    it('keeps the audit log newest first', async () => {
      await insertAudit(db, { actor: 'cli:root', action: 'platform.drain' });
      await insertAudit(db, { actor: 'operator:o@x', action: 'platform.resume', ok: false, detail: { error: 'x' } });
      const rows = await listAudit(db, { limit: 2 });
      assert.deepEqual(
        rows.map((r) => [r.action, r.ok]),
        [
          ['platform.resume', false],
          ['platform.drain', true],
        ],
      );
    });

    it('keeps the order two writers wrote in, whatever their clocks say (a sequence, not the time, orders the log)', async () => {
      // Another process (a second switch or the CLI, another host on PostgreSQL): its own copy of the store module,
      // with a clock 5 s behind this one's. It writes after this process; its entry is still the newest.
      const other = (await import(
        `../../store/operators.ts?writer=${kind.name}`
      )) as typeof import('../../store/operators.js');
      await insertAudit(db, { actor: 'cli:root', action: 'writer.first' });
      const now = Date.now;
      const behind = now() - 5000;
      Date.now = () => behind;
      try {
        await other.insertAudit(db, { actor: 'cli:other', action: 'writer.second' });
      } finally {
        Date.now = now;
      }
      await insertAudit(db, { actor: 'cli:root', action: 'writer.third' });
      const rows = await listAudit(db, { limit: 3 });
      assert.deepEqual(
        rows.map((r) => r.action),
        ['writer.third', 'writer.second', 'writer.first'],
      );
    });

    it('migration 026 numbers the entries already written in their old order (time, then id)', async () => {
      for (;;) {
        const [done] = (await db.migrate.list({ migrationSource })) as [Array<{ name: string }>, unknown];
        if (!done.some((m) => m.name === '026-operator-audit-seq')) break;
        await db.migrate.down({ migrationSource });
      }
      await db('operator_audit').del();
      const entry = (id: string, at: string) => ({ id, at, actor: 'cli:root', action: `old.${id}` });
      await db('operator_audit').insert([
        entry('b', '2026-03-01T10:00:00.000Z'),
        entry('a', '2026-03-01T10:00:00.000Z'),
        entry('c', '2026-03-01T09:00:00.000Z'),
      ]);
      await migrate(db);
      await insertAudit(db, { actor: 'cli:root', action: 'new.d' });
      const rows = await listAudit(db, { limit: 10 });
      assert.deepEqual(
        rows.map((r) => [r.action, r.seq]),
        [
          ['new.d', 4],
          ['old.b', 3],
          ['old.a', 2],
          ['old.c', 1],
        ],
      );
      assert.deepEqual(
        (await listAudit(db, { before: 3 })).map((r) => r.action),
        ['old.a', 'old.c'],
      );
    });
  });
}
