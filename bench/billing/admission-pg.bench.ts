/**
 * What PostgreSQL spends on one admission (store/admissions.ts `simu_admit`, then its settlement), by how many live
 * calls the account has: the function counts the account's live calls and its admissions of the last second, so its
 * cost grows with both. Prints, per count of live calls, the CPU of this run's PostgreSQL server processes (the
 * throwaway server of test/support/postgres.ts, a child of this process) and of this process, per admission.
 *
 *   npx tsx bench/billing/admission-pg.bench.ts [admissions=2000] [live=0,100,400]
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { admitInStore, insertAccount, migrate, openDb, settleAdmission } from '../../store/index.js';
import { runSql } from '../../store/fixed-sql.js';
import { post } from '../../billing/index.js';
import { newPostgresDatabase } from '../../test/support/db.js';
import { insertOutboundCall } from '../../test/support/outbound-call.js';

const N = Number(process.argv[2] ?? 2000);
const LIVE = (process.argv[3] ?? '0,100,400').split(',').map(Number);
const TICK_US = 1e6 / 100; // USER_HZ

/** CPU ticks of this process's descendants (the PostgreSQL server and its backends, the exited ones included). */
function serverTicks(): number {
  const parent = new Map<number, number>();
  const stat = new Map<number, string[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ');
      parent.set(Number(d), Number(f[1]));
      stat.set(Number(d), f);
    } catch {
      // gone meanwhile
    }
  }
  const mine = (pid: number): boolean => {
    for (let p = parent.get(pid) ?? 0, n = 0; p > 1 && n < 20; p = parent.get(p) ?? 0, n++)
      if (p === process.pid) return true;
    return false;
  };
  let t = 0;
  for (const [pid, f] of stat) if (mine(pid)) t += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  return t;
}

const db = openDb({ databaseUrl: await newPostgresDatabase(), dataDir: os.tmpdir() });
await migrate(db);
const account = await insertAccount(db, 'bench');
await post(db, { accountId: account.id, direction: 'credit', kind: 'topup', amountCents: 1_000_000_000 });
const admit = async () => {
  const r = await admitInStore(db, {
    accountId: account.id,
    nodeId: null,
    maxConcurrent: 1_000_000,
    maxCps: 1_000_000,
    minimumCents: 1,
    staleMs: 10_000,
  });
  await settleAdmission(db, r.admissionId!);
};

console.log(`simu_admit on PostgreSQL, ${N} admissions one after another, load ${os.loadavg()[0]!.toFixed(1)}`);
console.log('| live calls | admissions/s | PostgreSQL CPU µs/admission | switch CPU µs/admission |');
console.log('|---|---|---|---|');
let live = 0;
for (const target of LIVE) {
  for (; live < target; live++) {
    const call = await insertOutboundCall(db, account.id);
    await runSql(db, 'update "calls" set "status" = \'answered\' where "id" = ?', [call.id]);
  }
  for (let i = 0; i < 200; i++) await admit();
  const t0 = serverTicks();
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < N; i++) await admit();
  const wall = performance.now() - w0;
  const c = process.cpuUsage(c0);
  const pg = ((serverTicks() - t0) * TICK_US) / N;
  console.log(
    `| ${live} | ${((N * 1000) / wall).toFixed(0)} | ${pg.toFixed(0)} | ${((c.user + c.system) / N).toFixed(0)} |`,
  );
}
await db.destroy();
process.exit(0);
