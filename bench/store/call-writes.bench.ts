/**
 * What a group commit of the call path costs SQLite, and which indexes make it: the carrier call's writes (a call
 * leg's row and its three status updates, its events, its credit reservation, its ledger row and balance) run on a
 * better-sqlite3 connection with the store's schema, in commits of `legs` call legs' worth of writes, interleaved
 * as live calls are (a commit holds one leg's insert, another's ringing, another's answer, another's end). Prints
 * µs per leg by statement and for the COMMIT, and the pages each commit wrote to the WAL by b-tree (the WAL's frame
 * headers name the page; dbstat names its owner): a commit costs about 6 µs per page here (two write() calls).
 *
 *   npx tsx bench/store/call-writes.bench.ts [variant=current] [prefill legs=20000] [legs measured=3000] [legs per commit=1]
 *
 * Variants (joined with +): `current` (the store as it is), `random-ids` (calls, ledger ids and sids random, as
 * before store/ids.ts made them time-ordered), `fts-trigger` (005's trigger indexing every insert, as before 027);
 * what an index or trigger of the calls table costs: `no-status-index`, `no-account-status-index`,
 * `no-direction-index`, `no-live-triggers` (each drops it). Measured 2026-11-25, 3 legs a commit, µs a leg of
 * SQLite in all: current 189-193, no-status-index 178, no-account-status-index 168, no-live-triggers 179 (its
 * statements 20 µs less, its commit 4 more), all three indexes dropped 162.
 * Event ids are UUIDv7 in every variant (they always were). The SQL mirrors the call path's fixed statements.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { migrate, newCallSid, newId, openDb, Uuid7Generator } from '../../store/index.js';

/** The few parts of better-sqlite3 used here (the package has no type declarations installed). */
interface Statement {
  readonly reader: boolean;
  run(...args: unknown[]): unknown;
  all(...args: unknown[]): unknown[];
}
interface Connection {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  pragma(sql: string): unknown;
  transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
  close(): void;
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => Connection;

const [variant = 'current', prefillArg = '20000', legsArg = '3000', perCommitArg = '1'] = process.argv.slice(2);
const opts = new Set(variant.split('+'));
const PREFILL = Number(prefillArg);
const LEGS = Number(legsArg);
const LEGS_PER_COMMIT = Number(perCommitArg);

const dir = mkdtempSync(path.join(os.tmpdir(), 'call-writes-'));
const kdb = openDb({ databaseUrl: '', dataDir: dir });
await migrate(kdb);
await kdb.destroy();
const db = new Database(path.join(dir, 'simu.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 0'); // checkpoints between measured commits, outside the timing
if (opts.has('fts-trigger')) {
  db.exec('drop trigger calls_search_ai');
  db.exec(`create trigger calls_search_ai after insert on calls begin
    insert into calls_search(rowid, numbers) values (new.rowid, new.from_number || ' ' || new.to_number); end`);
}
if (opts.has('no-status-index')) db.exec('drop index calls_status_index');
if (opts.has('no-account-status-index')) db.exec('drop index calls_account_status_created_id');
if (opts.has('no-direction-index')) db.exec('drop index calls_account_direction_created_id');
if (opts.has('no-live-triggers')) for (const t of ['ai', 'au', 'ad']) db.exec(`drop trigger calls_live_${t}`);
const eventIds = new Uuid7Generator();
const rowId = opts.has('random-ids') ? () => randomUUID() : newId;
const sid = opts.has('random-ids') ? () => `call_${randomBytes(12).toString('hex')}` : () => newCallSid();

const acct = randomUUID();
db.prepare(
  `insert into accounts (id, name, status, balance_cents, created_at, signing_secret) values (?, 'bench', 'active', 1e12, ?, 'x')`,
).run(acct, new Date().toISOString());
const CALL_COLUMNS = ['id', 'sid', 'account_id', 'direction', 'from_number', 'to_number', 'status', 'node_id'];
const EVENT = `(?, ?, ?, ?, ?, ?, ?)`;
const S = {
  live: db.prepare(
    `select a.balance_cents, coalesce(l.live, 0) as live from accounts a left join account_live_calls l on l.account_id = a.id where a.id = ?`,
  ),
  insertCall: db.prepare(
    `insert into calls (${CALL_COLUMNS.join(', ')}, started_at, created_at) values (${CALL_COLUMNS.map(() => '?').join(', ')}, ?, ?)`,
  ),
  ringing: db.prepare(`update calls set status = ? where id = ? and status in (?)`),
  answered: db.prepare(`update calls set status = ?, answered_at = ? where id = ? and status in (?, ?)`),
  ended: db.prepare(
    `update calls set status = ?, reason_code = ?, reason_label = ?, ended_at = ?, duration_seconds = ?, talk_seconds = ?, cost_cents = ? where id = ? and status in (?, ?, ?)`,
  ),
  event: db.prepare(`insert into call_events (id, account_id, call_id, code, event, data, created_at) values ${EVENT}`),
  events2: db.prepare(
    `insert into call_events (id, account_id, call_id, code, event, data, created_at) values ${EVENT}, ${EVENT}`,
  ),
  credit: db.prepare(
    `insert into call_credit (call_id, account_id, node_id, rate_cents_per_minute, answered_at, heartbeat_at) values (?, ?, ?, ?, ?, ?)`,
  ),
  creditDone: db.prepare(`delete from call_credit where call_id = ?`),
  settled: db.prepare(`select * from wallet_transactions where settlement_key in (?, ?)`),
  ledger: db.prepare(
    `insert into wallet_transactions (id, account_id, direction, kind, amount_cents, balance_before_cents, call_id, settlement_key, created_at, seq) values (?, ?, 'debit', 'call', 5, 1000, ?, ?, ?, ?)`,
  ),
  balance: db.prepare(`update accounts set balance_cents = balance_cents - 5 where id = ?`),
};

const nsByStatement = new Map<string, number>();
let timing = false;
function run(name: keyof typeof S, ...args: unknown[]): void {
  const st = S[name];
  if (!timing) {
    void (st.reader ? st.all(...args) : st.run(...args));
    return;
  }
  const t0 = process.hrtime.bigint();
  void (st.reader ? st.all(...args) : st.run(...args));
  nsByStatement.set(name, (nsByStatement.get(name) ?? 0) + Number(process.hrtime.bigint() - t0));
}

const now = () => new Date().toISOString();
const data = JSON.stringify({
  direction: 'inbound',
  from: '+254700000000',
  to: '+254711900002',
  note: 'x'.repeat(100),
});
const legIds: string[] = [];
let seq = 0;
/** One stage of leg i's life: 0 created, 1 ringing, 2 answered, 3 ended and settled. */
function stage(i: number, k: number): void {
  const id = k === 0 ? rowId() : legIds[i]!;
  const t = now();
  if (k === 0) {
    legIds[i] = id;
    const from = `+2547${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;
    run('live', acct);
    run('insertCall', id, sid(), acct, 'inbound', from, '+254711900002', 'initiated', 'node', t, t);
    run('events2', eventIds.next(), acct, id, 'CALL.0100', 'call.initiated', data, t, eventIds.next(), acct, id, 'WH.0200', 'webhook', data, t); // prettier-ignore
  } else if (k === 1) {
    run('ringing', 'ringing', id, 'initiated');
    run('event', eventIds.next(), acct, id, 'CALL.0180', 'call.ringing', data, t);
  } else if (k === 2) {
    run('answered', 'answered', t, id, 'initiated', 'ringing');
    run('events2', eventIds.next(), acct, id, 'CALL.0200', 'call.answered', data, t, eventIds.next(), acct, id, 'DIAL.0200', 'dial', data, t); // prettier-ignore
    run('credit', id, acct, 'node', 1, t, t);
  } else {
    run('ended', 'completed', 'END.0200', 'normal', t, 1, 1, 5, id, 'initiated', 'ringing', 'answered');
    run('creditDone', id);
    run('settled', `call:${id}:talk`, `call:${id}:tts`);
    run('ledger', rowId(), acct, id, `call:${id}:talk`, t, ++seq);
    run('balance', acct);
    run('events2', eventIds.next(), acct, id, 'CALL.0300', 'call.completed', data, t, eventIds.next(), acct, id, 'BILL.0200', 'billed', data, t); // prettier-ignore
    delete legIds[i];
  }
}
/** Step n: leg n is created, leg n-40 rings, n-80 is answered, n-240 ends (150 legs/s: calls of about 1.6 s). */
const LAG = [0, 40, 80, 240];
const steps = (from: number, to: number) => {
  for (let n = from; n < to; n++) for (let k = 0; k < 4; k++) if (n - LAG[k]! >= 0) stage(n - LAG[k]!, k);
};
const fill = db.transaction(steps);
for (let n = 0; n < PREFILL + 240; n += 5000) fill(n, Math.min(n + 5000, PREFILL + 240));
db.pragma('wal_checkpoint(TRUNCATE)');
const wal = path.join(dir, 'simu.db-wal');
const walBytes = () => (existsSync(wal) ? statSync(wal).size : 0);
const FRAME = 4096 + 24;

const begin = db.prepare('BEGIN');
const commit = db.prepare('COMMIT');
let commitNs = 0;
let commits = 0;
let frames = 0;
const cpu0 = process.cpuUsage();
let n = PREFILL + 240;
for (const end = n + LEGS; n < end; n += LEGS_PER_COMMIT) {
  timing = true;
  begin.run();
  steps(n, n + LEGS_PER_COMMIT);
  const w0 = walBytes();
  const t0 = process.hrtime.bigint();
  commit.run();
  commitNs += Number(process.hrtime.bigint() - t0);
  frames += (walBytes() - w0) / FRAME;
  commits++;
  timing = false;
  if (commits % 200 === 0) db.pragma('wal_checkpoint(TRUNCATE)');
}
const cpu = process.cpuUsage(cpu0);

// The pages of 50 more commits, by the b-tree that owns each.
db.pragma('wal_checkpoint(TRUNCATE)');
for (let c = 0; c < 50; c++, n += LEGS_PER_COMMIT) db.transaction(steps)(n, n + LEGS_PER_COMMIT);
const owner = new Map<number, string>();
for (const r of db.prepare('select name, pageno from dbstat').all() as { name: string; pageno: number }[])
  owner.set(r.pageno, r.name);
const walData = readFileSync(wal);
const pagesBy = new Map<string, number>();
for (let off = 32; off + 24 <= walData.length; off += FRAME) {
  const name = owner.get(walData.readUInt32BE(off)) ?? '(free)';
  pagesBy.set(name, (pagesBy.get(name) ?? 0) + 1);
}
db.close();
rmSync(dir, { recursive: true, force: true });

const perLeg = (ns: number) => (ns / 1000 / LEGS).toFixed(1);
const statements = [...nsByStatement.values()].reduce((a, b) => a + b, 0);
console.log(
  `\ncall writes on SQLite: ${variant}, ${PREFILL} legs before, ${LEGS} measured, ${LEGS_PER_COMMIT} leg(s) per commit, load ${os.loadavg()[0]?.toFixed(1)}\n`,
);
console.log('| µs per leg | what |');
console.log('|---|---|');
console.log(`| ${perLeg(statements + commitNs)} | SQLite in all (statements and COMMIT) |`);
console.log(
  `| ${perLeg(commitNs)} | COMMIT (${(commitNs / commits / 1000).toFixed(0)} µs each, ${(frames / commits).toFixed(1)} pages each) |`,
);
for (const [name, ns] of [...nsByStatement].sort((a, b) => b[1] - a[1])) console.log(`| ${perLeg(ns)} | ${name} |`);
console.log(`| ${((cpu.user + cpu.system) / LEGS).toFixed(0)} | process CPU |`);
console.log(`\npages per commit by b-tree (50 commits):\n`);
console.log(
  [...pagesBy]
    .sort((a, b) => b[1] - a[1])
    .map(([name, pages]) => `${name} ${(pages / 50).toFixed(1)}`)
    .join(', '),
);
