/**
 * Routing decision time per call (issue 17, "done when": p99 < 1 ms with 100,000 prefixes): the whole
 * TrunkDirectory.outboundPlan a call makes (sell-rate lookup, trie walk, ordering, health and margin checks) over a
 * SQLite store holding 100,000 routes on 20 trunks and 200 sell rates; plus the cost of (re)loading that table, which
 * happens only when `simu routes` changes it. Run: npx tsx bench/calls/routing.bench.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TrunkRouteTable, TrunkDirectory } from '../../sip/index.js';
import { insertTrunk, listRoutes, migrate, newId, nowIso, openDb, putSetting, setRate } from '../../store/index.js';

const PREFIXES = 100_000;
const CALLS = 100_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-bench-routing-'));
const db = openDb({ databaseUrl: '', dataDir: dir });
await migrate(db);

// A deterministic generator, so two runs plan the same numbers.
let seed = 42;
const rand = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 10)).join('');

const trunks = [];
for (let i = 0; i < 20; i++)
  trunks.push(
    await insertTrunk(db, {
      name: `carrier-${i}`,
      host: `10.0.0.${i + 1}`,
      port: 5060,
      transport: 'udp',
      username: null,
      password: null,
      inbound_addresses: [],
    }),
  );
for (let i = 0; i < 200; i++) await setRate(db, 'outbound', 100 + i, String(i + 1));

// 100,000 distinct prefixes of 2 to 9 digits, each on one to three trunks.
const prefixes = new Set<string>();
while (prefixes.size < PREFIXES) prefixes.add(String(1 + Math.floor(rand() * 9)) + digits(1 + Math.floor(rand() * 8)));
let rows: Array<Record<string, unknown>> = [];
let routes = 0;
for (const prefix of prefixes) {
  const on = 1 + Math.floor(rand() * 3);
  for (let k = 0; k < on; k++) {
    rows.push({
      id: newId(),
      prefix,
      trunk_id: trunks[(routes + k * 7) % trunks.length].id,
      priority: k,
      weight: 1 + Math.floor(rand() * 3),
      buy_rate_cents: 50 + Math.floor(rand() * 100),
      created_at: nowIso(),
    });
  }
  routes += on;
  if (rows.length >= 500) {
    await db.batchInsert('routes', rows, 500);
    rows = [];
  }
}
if (rows.length) await db.batchInsert('routes', rows, 500);
await putSetting(db, 'routes_version', 'bench');

const t0 = performance.now();
const table = new TrunkRouteTable(await listRoutes(db));
const loadMs = performance.now() - t0;

const directory = new TrunkDirectory(db, { ttlMs: 60_000, random: rand });
const numbers = Array.from({ length: CALLS }, () => `+${String(1 + Math.floor(rand() * 9))}${digits(11)}`);
await directory.outboundPlan(numbers[0]); // the first use loads trunks, routes and rates
const byId = new Map(trunks.map((t) => [t.id, t]));

/**
 * Times `plan` once per number: wall-clock p50/p99/p99.9/max in ms, and the p99 of the process's CPU time per call
 * (getrusage, µs resolution), which a box shared with other work does not inflate by preempting the process.
 */
async function measure(what: string, plan: (n: string) => unknown): Promise<Record<string, string | number>> {
  const wall = new Float64Array(CALLS);
  const cpu = new Float64Array(CALLS);
  for (let i = 0; i < CALLS; i++) {
    const c = process.cpuUsage();
    const s = performance.now();
    await plan(numbers[i]);
    wall[i] = performance.now() - s;
    const d = process.cpuUsage(c);
    cpu[i] = (d.user + d.system) / 1000;
  }
  wall.sort();
  cpu.sort();
  const q = (a: Float64Array, p: number) => a[Math.min(CALLS - 1, Math.floor(p * CALLS))].toFixed(4);
  return {
    'decision per call': what,
    calls: CALLS,
    'p50 ms': q(wall, 0.5),
    'p99 ms': q(wall, 0.99),
    'p99.9 ms': q(wall, 0.999),
    'max ms': wall[CALLS - 1].toFixed(3),
    'cpu p99 ms': q(cpu, 0.99),
  };
}

const covered = (await Promise.all(numbers.slice(0, 1000).map((n) => directory.outboundPlan(n)))).filter(
  (p) => p.targets.length > 0,
).length;
console.log(
  `routes table: ${table.size} routes on ${prefixes.size} prefixes, loaded in ${loadMs.toFixed(0)} ms (on change only); ${covered} of 1000 numbers have a route`,
);
console.table([
  await measure('TrunkDirectory.outboundPlan (what a call runs)', (n) => directory.outboundPlan(n)),
  await measure('TrunkRouteTable.plan alone', (n) =>
    table.plan(n.slice(1), {
      allowLossMaking: false,
      sellRateCents: 150,
      trunks: byId,
      isUp: () => true,
      random: rand,
    }),
  ),
]);
await db.destroy();
rmSync(dir, { recursive: true, force: true });
