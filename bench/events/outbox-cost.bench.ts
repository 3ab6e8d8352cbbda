/**
 * What a status callback costs the switch's process, apart from the rest of a call: events are emitted for calls at
 * a steady rate (13 a call, the carrier call's), stored and delivered through the real publisher and outbox on
 * SQLite with the switch's group commit, to a receiver in a child process (its CPU is not counted). Reports this
 * process's CPU per delivered callback (all of it: emitting, storing, leasing, signing, the HTTP client, marking,
 * WH.0200), SQL statements and SQLite execution time per callback, and the deliveries counted against the store.
 *
 *   npx tsx bench/events/outbox-cost.bench.ts [calls/s=100] [seconds=10]
 *   npx tsx bench/events/outbox-cost.bench.ts --micro
 *
 * `--micro` measures building alone, no receiver: µs per status-callback body (the frame and the canonical body of a
 * carrier call's 13 events) and CPU µs per emit (stored through the group commit on SQLite, no outbox attached).
 *
 * Steadier than the carrier bench on a shared box (no SIP, no media, one process measured): compare two builds run
 * within the same minutes. `--cpu-prof` on node (`node --cpu-prof --import tsx ...`) profiles just this path.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { openDb, migrate, timeStatements, type Db } from '../../store/index.js';
import {
  EventBus,
  EventCodes,
  EventPublisher,
  StatusCallbackOutbox,
  buildStatusCallbackBody,
  buildStreamFrame,
  eventFor,
  toCallSnapshot,
  type EventCode,
} from '../../events/index.js';
import { UrlPolicy } from '../../kit/index.js';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const RATE = Number(positional[0] ?? 100);
const SECONDS = Number(positional[1] ?? 10);
const quiet = pino({ level: 'silent' });
/** A carrier call's events with a status URL: 13 callbacks. */
const CALL_EVENTS = [
  EventCodes.callInitiated,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.callRinging,
  EventCodes.callAnswered,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.ttsGenerated,
  EventCodes.callCompleted,
];

/** Each event's own data as the calls room emits it (calls/call-verbs.ts, calls/call-lifecycle.ts). */
const dataOf = (code: EventCode): Record<string, unknown> =>
  code === EventCodes.ttsGenerated ? { seconds: 2.4, tier: 'standard' } : {};

/** A carrier call's row as its owner holds it after the final update. */
/** A fresh SQLite store with the group commit the switch uses, and one account whose status URL is `statusUrl`. */
async function benchStore(accountId: string, statusUrl: string): Promise<Db> {
  const db = openDb({
    databaseUrl: '',
    dataDir: mkdtempSync(path.join(os.tmpdir(), 'simu-outbox-cost-')),
    groupCommit: true,
    groupCommitWindowMs: 15,
  });
  await migrate(db);
  await db('accounts').insert({
    id: accountId,
    name: 'bench',
    signing_secret: 'whsec_bench',
    webhook_status: statusUrl,
    created_at: new Date().toISOString(),
  });
  return db;
}

const benchRow = (accountId: string): Record<string, unknown> => {
  const id = randomUUID();
  return {
    id,
    sid: `call_${id.replace(/-/g, '').slice(0, 24)}`,
    account_id: accountId,
    direction: 'inbound',
    from_number: '+254700000001',
    to_number: '+254700000002',
    status: 'completed',
    reason_code: 'CALL.0300',
    duration_seconds: 42,
    talk_seconds: 37,
    cost_cents: 123,
    custom_payload: JSON.stringify({ order: 'A-1029', customer: { tier: 'gold', lang: 'sw' }, attempt: 2 }),
    started_at: '2026-01-01T10:00:00.000Z',
    answered_at: '2026-01-01T10:00:05.000Z',
    ended_at: '2026-01-01T10:00:42.000Z',
    created_at: '2026-01-01T10:00:00.000Z',
  };
};

if (process.argv.includes('--micro')) {
  const accountId = randomUUID();
  const row = benchRow(accountId);
  const customPayload = JSON.parse(String(row.custom_payload)) as Record<string, unknown>;
  // Body: the frame and body the publisher builds, per event; a round of 13 events repeated.
  const bodyRound = (): number => {
    let bytes = 0;
    for (const code of CALL_EVENTS) {
      const snapshot = toCallSnapshot(row);
      const frame = buildStreamFrame({
        code,
        event: eventFor(code).event,
        sid: snapshot.sid,
        customPayload,
        createdAt: '2026-01-01T10:00:01.000Z',
        data: dataOf(code),
      });
      bytes += buildStatusCallbackBody(frame, 'evt_0123456789abcdef', accountId, snapshot).length;
    }
    return bytes;
  };
  const perBody: number[] = [];
  let bytes = 0;
  for (let round = 0; round < 7; round++) {
    const n = 4000;
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) bytes = bodyRound();
    const c = process.cpuUsage(c0);
    if (round > 1) perBody.push((c.user + c.system) / (n * CALL_EVENTS.length));
  }
  // Emit: stored through the group commit, no outbox attached; 100 calls' 13 events at a time.
  const db = await benchStore(accountId, 'http://127.0.0.1:9/status');
  const publisher = new EventPublisher({ db, bus: new EventBus(quiet), logger: quiet });
  const rows = Array.from({ length: 100 }, () => benchRow(accountId));
  for (const r of rows) await db('calls').insert(r);
  const perEmit: number[] = [];
  for (let round = 0; round < 8; round++) {
    const c0 = process.cpuUsage();
    for (const code of CALL_EVENTS) {
      await Promise.all(
        rows.map((r) => publisher.emit({ accountId, code, callId: r.id as string, callRow: r, data: dataOf(code) })),
      );
    }
    const c = process.cpuUsage(c0);
    if (round > 2) perEmit.push((c.user + c.system) / (rows.length * CALL_EVENTS.length));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`outbox cost, building only: load ${os.loadavg()[0]!.toFixed(1)}`);
  console.log('\n| µs per body (frame + canonical body) | bytes per call | CPU µs per emit (stored, not sent) |');
  console.log('|---|---|---|');
  console.log(`| ${median(perBody).toFixed(1)} | ${bytes} | ${median(perEmit).toFixed(0)} |`);
  await db.destroy();
  process.exit(0);
}

// The receiver: a child process answering 200 to every POST and counting them.
const receiver = fork(
  '-e',
  [
    `const http = require('node:http'); let n = 0;
     const s = http.createServer((req, res) => { req.resume(); req.on('end', () => { n++; res.end(); }); });
     s.keepAliveTimeout = 4000;
     s.listen(0, '127.0.0.1', () => process.send({ port: s.address().port }));
     process.on('message', () => process.send({ count: n }));`,
  ],
  { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
);
const port = await new Promise<number>((r) => receiver.once('message', (m: { port: number }) => r(m.port)));
const receivedCount = () =>
  new Promise<number>((r) => {
    receiver.once('message', (m: { count: number }) => r(m.count));
    receiver.send('count');
  });

const accountId = randomUUID();
const db = await benchStore(accountId, `http://127.0.0.1:${port}/status`);

const bus = new EventBus(quiet);
const publisher = new EventPublisher({ db, bus, logger: quiet });
const outbox = new StatusCallbackOutbox({
  db,
  publisher,
  logger: quiet,
  urlPolicy: new UrlPolicy({ allowPrivate: true }),
}).start();
let wh = 0;
bus.observe((e) => {
  if (e.frame.code === EventCodes.webhookDelivered) wh++;
});

let statements = 0;
db.on('query', () => statements++);
let sqliteNs = 0;
/** SQL_TIMING=1: SQLite µs by statement shape (its first 100 characters), commits included, printed at the end. */
const nsByShape = new Map<string, number>();
// Statements' own time; a commit's (mostly the WAL write, with the group commit's whole group in it) is left out.
timeStatements((sql, ns) => {
  if (!sql.startsWith('COMMIT')) sqliteNs += ns;
  if (process.env.SQL_TIMING === '1') {
    const shape = sql.slice(0, 100);
    nsByShape.set(shape, (nsByShape.get(shape) ?? 0) + ns);
  }
});

/** One call: its row, then its events spread over about a second, one after another. */
async function call(): Promise<void> {
  const id = randomUUID();
  const snapshot = {
    id,
    sid: `call_${id.replace(/-/g, '').slice(0, 24)}`,
    account_id: accountId,
    direction: 'inbound',
    from_number: '+254700000001',
    to_number: '+254700000002',
    status: 'answered',
    created_at: new Date().toISOString(),
  };
  await db('calls').insert(snapshot);
  for (const code of CALL_EVENTS) {
    await publisher.emit({ accountId, code, callId: id, callRow: snapshot });
    await new Promise((r) => setTimeout(r, 1000 / CALL_EVENTS.length));
  }
}

/** `total` calls at RATE a second; resolves once each of their callbacks was received and its WH.0200 seen. */
async function run(total: number, already: number): Promise<void> {
  const start = performance.now();
  const calls: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / RATE - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    calls.push(call());
  }
  await Promise.all(calls);
  const expected = already + total * CALL_EVENTS.length;
  const deadline = performance.now() + 60_000;
  const idle = () => new Promise((r) => setTimeout(r, 20));
  while ((await receivedCount()) < expected && performance.now() < deadline) await idle();
  while (wh < expected && performance.now() < deadline) await idle();
}

// Two seconds first, not measured: the code optimised, the connections to the receiver open.
const warm = RATE * 2;
await run(warm, 0);
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const s0 = statements;
sqliteNs = 0;
nsByShape.clear();
const wh0 = wh;
const total = RATE * SECONDS;
await run(total, warm * CALL_EVENTS.length);
const expected = total * CALL_EVENTS.length;
const cpu = process.cpuUsage(cpu0);
const wall = (performance.now() - t0) / 1000;
const received = (await receivedCount()) - warm * CALL_EVENTS.length;
// The whole run's rows, warm-up included: all delivered, none pending or failed.
const stored = (await db('event_outbox').select('state').count({ n: '*' }).groupBy('state')) as Array<{
  state: string;
  n: number;
}>;
const us = (cpu.user + cpu.system) / expected;

console.log(
  `outbox cost: ${RATE} calls/s for ${SECONDS} s, ${CALL_EVENTS.length} callbacks a call, load ${os.loadavg()[0]!.toFixed(1)}`,
);
console.log('');
console.log(
  '| callbacks | received | WH.0200 | outbox rows | wall s | CPU µs/callback | SQL/callback | SQLite µs/callback |',
);
console.log('|---|---|---|---|---|---|---|---|');
console.log(
  `| ${expected} | ${received} | ${wh - wh0} | ${stored.map((r) => `${String(r.state)} ${String(r.n)}`).join(', ')} | ` +
    `${wall.toFixed(1)} | ${us.toFixed(0)} | ${((statements - s0) / expected).toFixed(2)} | ` +
    `${(sqliteNs / 1000 / expected).toFixed(1)} |`,
);
if (nsByShape.size > 0) {
  console.log('\n| SQLite µs per call | statement |\n|---|---|');
  for (const [shape, ns] of [...nsByShape].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    console.log(`| ${(ns / 1000 / total).toFixed(1)} | \`${shape.replace(/\|/g, '\\|')}\` |`);
  }
}
await outbox.close();
await db.destroy();
receiver.kill();
