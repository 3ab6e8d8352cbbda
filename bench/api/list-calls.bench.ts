/**
 * REST API latency and throughput at 50 concurrent clients over SQLite holding many CDRs.
 *
 *   npx tsx bench/api/list-calls.bench.ts            # 1,000,000 CDRs, 5 s per scenario
 *   BENCH_CALLS=200000 BENCH_SECONDS=3 npx tsx bench/api/list-calls.bench.ts
 *   BENCH_ONLY='ceiling|auth' BENCH_CLIENTS=1 npx tsx bench/api/list-calls.bench.ts   # some scenarios only
 *   SIMU_API_LIST_CACHE_MS=0 npx tsx bench/api/list-calls.bench.ts   # every list request queries the store
 *
 * The store is built once in $BENCH_DIR (default /tmp/simu-bench-api) and reused by later runs. The load
 * generator runs in a worker thread (plain node:http keep-alive clients) so it does not share the server's event
 * loop; on a 2-core box it still shares the CPU, so absolute figures are pessimistic.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { loadConfig, setLogLevel } from '../../config/index.js';
import { createApiServer } from '../../api/index.js';
import { NullCallEngine } from '../../test/support/null-call-engine.js';
import {
  indexCallsSearch,
  insertAccount,
  insertApiKey,
  migrate,
  newCallSid,
  newId,
  openDb,
  type Db,
} from '../../store/index.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 50);
const DIR = process.env.BENCH_DIR ?? '/tmp/simu-bench-api';

interface Fixture {
  calls: number;
  key: string;
  accountId: string;
  sampleIds: string[];
}

async function build(db: Db): Promise<Fixture> {
  const meta = path.join(DIR, `fixture-${CALLS}.json`);
  if (existsSync(meta)) return JSON.parse(readFileSync(meta, 'utf8')) as Fixture;
  const a = await insertAccount(db, 'Bench');
  const { key } = await insertApiKey(db, a.id, 'bench');
  const other = await insertAccount(db, 'Noise'); // a second tenant, so account_id actually filters
  const start = Date.parse('2025-01-01T00:00:00Z');
  const sampleIds: string[] = [];
  const statuses = ['completed', 'completed', 'completed', 'failed', 'answered'];
  const directions = ['outbound', 'outbound', 'inbound', 'internal'];
  const t0 = Date.now();
  const BATCH = 500;
  for (let i = 0; i < CALLS; i += BATCH) {
    const rows: Array<Record<string, unknown>> = [];
    for (let j = i; j < Math.min(CALLS, i + BATCH); j++) {
      const id = newId();
      if (j % Math.ceil(CALLS / 1000) === 0) sampleIds.push(id);
      rows.push({
        id,
        sid: newCallSid(),
        account_id: j % 10 === 9 ? other.id : a.id,
        direction: directions[j % directions.length],
        from_number: `+2547${String(10_000_000 + (j % 9_000_000)).padStart(8, '0')}`,
        to_number: `+2541${String((j * 7919) % 100_000_000).padStart(8, '0')}`,
        status: statuses[j % statuses.length],
        reason_code: 'END.0200',
        reason_label: 'Normal hangup',
        duration_seconds: j % 300,
        talk_seconds: j % 280,
        cost_cents: j % 1000,
        tts_seconds: 0,
        created_at: new Date(start + j * 15_000).toISOString(),
      });
    }
    await db.transaction(async (trx) => {
      for (let k = 0; k < rows.length; k += 50) await trx('calls').insert(rows.slice(k, k + 50));
    });
    if (i % 100_000 === 0 && i > 0) process.stderr.write(`  ${i} CDRs (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  }
  await indexCallsSearch(db, Infinity); // the switch indexes in batches; a fixture this size, at once
  await db.raw('analyze');
  const f: Fixture = { calls: CALLS, key, accountId: a.id, sampleIds: sampleIds.filter((_, i) => i % 10 !== 9) };
  writeFileSync(meta, JSON.stringify(f));
  return f;
}

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, key, paths, clients, seconds } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const lat = []; let errors = 0; let done = 0;
const end = Date.now() + seconds * 1000;
function one() {
  return new Promise((resolve) => {
    const p = paths[Math.floor(Math.random() * paths.length)];
    const t = process.hrtime.bigint();
    const req = http.request({ host: '127.0.0.1', port, path: p, agent, headers: { authorization: 'Bearer ' + key } }, (res) => {
      res.resume();
      res.on('end', () => { if (res.statusCode !== 200) errors++; lat.push(Number(process.hrtime.bigint() - t) / 1e6); done++; resolve(); });
    });
    req.on('error', () => { errors++; resolve(); });
    req.end();
  });
}
async function client() { while (Date.now() < end) await one(); }
const t0 = Date.now();
Promise.all(Array.from({ length: clients }, client)).then(() => {
  agent.destroy();
  parentPort.postMessage({ lat, errors, done, elapsed: (Date.now() - t0) / 1000 });
});
`;

function run(port: number, key: string, paths: string[], seconds = SECONDS) {
  return new Promise<{ lat: number[]; errors: number; done: number; elapsed: number }>((resolve, reject) => {
    const w = new Worker(WORKER, { eval: true, workerData: { port, key, paths, clients: CLIENTS, seconds } });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main(): Promise<void> {
  setLogLevel('silent');
  mkdirSync(DIR, { recursive: true });
  const db = openDb({ databaseUrl: '', dataDir: DIR, sqliteFile: `bench-${CALLS}.db` });
  await migrate(db);
  process.stderr.write(`building/reusing a store of ${CALLS} CDRs in ${DIR}\n`);
  const f = await build(db);
  // The per-key rate limit would turn this throughput bench into a 429 bench: lifted here.
  const config = loadConfig(
    {
      SIMU_DATA_DIR: DIR,
      SIMU_LOG_LEVEL: 'silent',
      SIMU_API_RATE_PER_SECOND: '100000',
      SIMU_API_RATE_BURST: '100000',
      SIMU_API_ACCOUNT_RATE_PER_SECOND: '100000',
      SIMU_API_ACCOUNT_RATE_BURST: '100000',
      SIMU_API_LIST_CACHE_MS: process.env.SIMU_API_LIST_CACHE_MS ?? '1000',
    },
    DIR,
  );
  const { server } = createApiServer({
    db,
    config,
    calls: new NullCallEngine(db),
    signUrlSecret: 'bench',
    health: async () => ({ store: true, media: true }),
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const deep = Array.from({ length: 200 }, () => Math.floor(Math.random() * CALLS * 0.85));
  const scenarios: Array<[string, string[]]> = [
    ['ceiling: health, no auth, no store', ['/api/health']],
    ['auth only (GET /api/account)', ['/api/account']],
    ['get call by uuid', f.sampleIds.map((id) => `/api/calls/${id}`)],
    ['list, first page', ['/api/calls?limit=50']],
    ['list, status=failed', ['/api/calls?status=failed&limit=50']],
    ['list, direction=inbound, offset 10k', ['/api/calls?direction=inbound&offset=10000']],
    ['list, from_dt/to_dt (1 day)', ['/api/calls?from_dt=2025-02-01T00:00:00Z&to_dt=2025-02-02T00:00:00Z&limit=100']],
    ['list, search=254712', ['/api/calls?search=254712&limit=20']],
    ['list, deep offsets (random, up to 85%)', deep.map((o) => `/api/calls?offset=${o}&limit=50`)],
  ];
  const rows: string[] = [];
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
  for (const [name, paths] of scenarios) {
    if (only && !only.test(name)) continue;
    await run(port, f.key, paths, 1).catch(() => undefined); // warm the page cache and the list cache
    const r = await run(port, f.key, paths);
    const s = r.lat.sort((a, b) => a - b);
    rows.push(
      `| ${name} | ${pct(s, 50).toFixed(1)} | ${pct(s, 99).toFixed(1)} | ${(r.done / r.elapsed).toFixed(0)} | ${r.errors} |`,
    );
    process.stderr.write(`${rows[rows.length - 1]}\n`);
  }
  const listCache = config.api.listCacheMs > 0 ? `list pages kept ${config.api.listCacheMs} ms` : 'no list page cache';
  console.log(
    `\nREST API, SQLite, ${CALLS} CDRs, ${CLIENTS} concurrent clients, ${SECONDS} s per scenario, ${listCache}\n`,
  );
  console.log('| scenario | p50 ms | p99 ms | req/s | errors |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  server.closeAllConnections();
  server.close();
  await db.destroy();
}

await main();
