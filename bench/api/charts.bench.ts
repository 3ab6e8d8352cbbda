/**
 * The charts' queries (issue 21) over SQLite holding many CDRs: what the portal and the console ask for a window,
 * read from the hourly roll-up, and the roll-up job itself.
 *
 *   npx tsx bench/api/charts.bench.ts                 # 1,000,000 CDRs over 90 days, 200 runs per query
 *   BENCH_CALLS=100000 BENCH_RUNS=50 npx tsx bench/api/charts.bench.ts
 *
 * The store is built once in $BENCH_DIR (default /tmp/simu-bench-charts) and reused by later runs: 90 % of the
 * CDRs on one account, 10 % on another, and 20,000 failed status callbacks. Printed: p50, p99 and max of each
 * query, the back-fill at a first start on an old store (all of it, and one day's transaction), the per-minute
 * roll-up the switch runs (also over a busy hour), and, for comparison, calls per day aggregated straight from the CDRs.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setLogLevel } from '../../config/index.js';
import { chartData, chartWindow, StatsRollup } from '../../api/index.js';
import { insertAccount, migrate, newId, openDb, rollUpCallStats, type Db } from '../../store/index.js';
import { seedCdrs } from '../../test/support/seed-cdrs.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const DIR = process.env.BENCH_DIR ?? '/tmp/simu-bench-charts';
const DAYS = 90;

interface Fixture {
  calls: number;
  big: string;
  small: string;
  now: number;
  seedMs: number;
}

async function build(db: Db): Promise<Fixture> {
  const meta = path.join(DIR, `fixture-${CALLS}.json`);
  if (existsSync(meta)) return JSON.parse(readFileSync(meta, 'utf8')) as Fixture;
  const t0 = Date.now();
  const big = (await insertAccount(db, 'Big')).id;
  const small = (await insertAccount(db, 'Small')).id;
  const now = Date.now();
  await seedCdrs(db, { accountId: big, count: Math.round(CALLS * 0.9), days: DAYS, now, seed: 7 });
  await seedCdrs(db, { accountId: small, count: Math.round(CALLS * 0.1), days: DAYS, now, seed: 11 });
  const failed = Array.from({ length: 20_000 }, (_, i) => {
    const at = new Date(now - (i / 20_000) * DAYS * 86400_000).toISOString();
    return {
      id: newId(),
      account_id: i % 10 ? big : small,
      event: 'call.completed',
      url: 'https://hooks.example.net/status',
      body: '{}',
      attempts: 8,
      state: i % 4 ? 'delivered' : 'failed',
      next_attempt_at: at,
      created_at: at,
      done_at: at,
    };
  });
  await db.batchInsert('event_outbox', failed, 500);
  const f = { calls: CALLS, big, small, now, seedMs: Date.now() - t0 };
  writeFileSync(meta, JSON.stringify(f));
  return f;
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!;

async function time(fn: () => Promise<unknown>, runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

async function main() {
  setLogLevel('silent');
  mkdirSync(DIR, { recursive: true });
  const db = openDb({ databaseUrl: '', dataDir: DIR });
  await migrate(db);
  const f = await build(db);
  const rows: Array<[string, number[]]> = [];

  // A first start on an old store: the job back-fills every day, one transaction per day (SQLite's one writer is
  // held for the longest of these, not for the whole back-fill).
  await db('platform_settings').where({ key: 'call_stats_rolled_hour' }).delete();
  const job = new StatsRollup(db);
  rows.push(['back-fill of every CDR by the job (a first start)', await time(() => job.runOnce(), 1)]);
  const days = Array.from({ length: 20 }, (_, i) =>
    new Date(f.now - (i * 4 + 2) * 86400_000).toISOString().slice(0, 10),
  );
  let d = 0;
  rows.push([
    'back-fill of one day (a read, then a short write)',
    await time(() => rollUpCallStats(db, `${days[d++]}T00`, true), 20),
  ]);
  // The switch's minute job: from its last hour (nothing live here: the current hour).
  rows.push(['roll-up job run (each minute)', await time(() => job.runOnce(), 20)]);

  // A busy hour: BENCH_BUSY CDRs made in the last half hour (about 55 calls/s), which the minute job recomputes each
  // run. Taken out again afterwards so the stored fixture stays as built.
  const BUSY = Number(process.env.BENCH_BUSY ?? 100_000);
  if (BUSY > 0) {
    const busy = (await insertAccount(db, 'Busy hour')).id;
    await seedCdrs(db, { accountId: busy, count: BUSY, days: 1 / 48, seed: 5 });
    await job.runOnce();
    rows.push([`roll-up job run, ${BUSY.toLocaleString('en')} CDRs this hour`, await time(() => job.runOnce(), 10)]);
    await db('calls').where({ account_id: busy }).delete();
    await db('accounts').where({ id: busy }).delete();
    await job.runOnce();
  }

  const queries: Array<[string, Record<string, string>, string | null]> = [
    ['portal, big account, last 24 h by hour', { days: '1' }, f.big],
    ['portal, big account, last 7 days', { days: '7' }, f.big],
    ['portal, big account, last 30 days', { days: '30' }, f.big],
    ['portal, big account, last 90 days', { days: '90' }, f.big],
    ['portal, small account, last 30 days', { days: '30' }, f.small],
    ['console, every account, last 30 days', { days: '30' }, null],
    ['console, every account, last 90 days', { days: '90' }, null],
  ];
  for (const [name, q, account] of queries)
    rows.push([name, await time(() => chartData(db, chartWindow(q, account)), RUNS)]);

  // For comparison: the calls-per-day figures aggregated straight from the CDRs (no roll-up), a few runs.
  const from = new Date(Date.now() - 30 * 86400_000).toISOString();
  rows.push([
    'without roll-up: big account 30 days straight from calls',
    await time(
      () =>
        db('calls')
          .select(db.raw('substr(created_at, 1, 10) as d'))
          .count({ n: '*' })
          .sum({ c: 'cost_cents' })
          .where('account_id', f.big)
          .andWhere('created_at', '>=', from)
          .groupByRaw('substr(created_at, 1, 10)'),
      5,
    ),
  ]);

  console.log(`\nchart queries over ${f.calls.toLocaleString('en')} CDRs (${DAYS} days), SQLite, ${RUNS} runs each`);
  console.log(`(store built in ${(f.seedMs / 1000).toFixed(0)} s, reused from ${DIR})\n`);
  console.log(`| ${'what'.padEnd(56)} | runs | p50 ms | p99 ms | max ms |`);
  console.log(`|${'-'.repeat(58)}|------|--------|--------|--------|`);
  for (const [name, xs] of rows)
    console.log(
      `| ${name.padEnd(56)} | ${String(xs.length).padStart(4)} | ${pct(xs, 0.5).toFixed(1).padStart(6)} | ${pct(xs, 0.99).toFixed(1).padStart(6)} | ${Math.max(
        ...xs,
      )
        .toFixed(1)
        .padStart(6)} |`,
    );
  await db.destroy();
}

await main();
