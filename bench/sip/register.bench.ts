/**
 * Registrations through the whole switch, measured from outside: N end-users with phone tokens (minted as
 * POST /api/phone-tokens/mint does) register with SIPp, digest with the token's short form as password: REGISTER,
 * 401 challenge, REGISTER with Authorization, 200. The switch runs in this process on SQLite (its CPU is this
 * process's, less a little for the bench's own bookkeeping), SIPp is a child.
 *
 * Per step: offered rate, registrations, done (200), failed, REGISTER->401 and whole registration (first REGISTER ->
 * 200) p50/p99 from SIPp's own timers, switch CPU ms per registration, event-loop delay p99, SQL statements per
 * registration; beside it the Kamailio registrar figure at that rate from a Kamailio registrar run given in
 * SIMU_BENCH_KAMAILIO_REGISTRAR (optional; re-run by hand on the same box).
 *
 *   npx tsx bench/sip/register.bench.ts [rates=500,1000,2000,3000] [seconds=10] [users=2000] [mode=refresh|new]
 *
 * mode refresh (the anchor's workload): each phone registers the same contact again, with a new Call-ID each time.
 * mode new: every registration names a contact not seen before (a binding change each time: the worst case).
 * Flood bans are raised for the bench: every phone here is 127.0.0.1 (real phones come from their own addresses).
 * LIMIT=<n> caps the registrations in progress at n (SIPp -l; default five seconds' worth of the rate): with a rate
 * above what the switch carries it is a closed loop, n at a time and no retransmission, whose CPU ms per registration
 * is the work of one registration alone, steadier than an open-loop step's on a box others are using.
 * Keep-alives to the bindings (sip.keepAliveSeconds) are off unless KEEPALIVE=<seconds>: SIPp answers no OPTIONS, so
 * each would be retransmitted for 32 s and every binding dropped as a dead flow after three intervals (re-added,
 * AUTH.0200, urgent writes, on its next REGISTER); the Kamailio anchor pings no one either.
 * BENCH_PORT_SHIFT=<n> moves every port by n (two benches on one box). The CPU column is user + system time, system
 * (the kernel: sending datagrams, loopback delivery to SIPp included) in brackets; GC is V8's pause time per
 * registration and the longest pause of the step. UDP drops: datagrams the kernel dropped for a full receive buffer
 * at the switch's socket during the step (/proc/net/udp); SIPp retransmissions: requests SIPp sent again after
 * 500 ms without an answer (a drop anywhere, or an answer that late). UDP_FRONT=true|false sets
 * overload.udpFront (default: the switch's default); the header line says which ran.
 * The main thread's own CPU per registration and the time it waited for a core (ms per second of the step) come
 * from Linux's per-thread schedstat: the event loop is one thread, and at 2,000/s it is the one near a full core;
 * the other threads' CPU (the UDP front's worker, SQLite's checkpointer, V8's helpers) is printed below the table.
 * BENCH_PROFILE=<file>: CPU profile of the steps (top frames printed); BENCH_HEAP_PROFILE=<file>: V8's sampling
 * allocation profile of the steps (bytes per registration by frame; with BENCH_HEAP_PROMOTED=1 only what outlived the
 * young generation); BENCH_STALLS=<ms>: every event-loop stall
 * longer than that, with the GC pauses and the main thread's time descheduled during it (and, with BENCH_PROFILE,
 * the frames it ran), longest first.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestSwitch } from '../../test/e2e/support/harness.js';
import { loadServerSecret } from '../../cli/first-run.js';
import { insertAccount, insertEndUser, insertPhoneToken, type Db, type EndUserRow } from '../../store/index.js';
import { signPhoneToken } from '../../sip/index.js';
import { shortPassword } from '../../sip/registrar-credentials.js';
import {
  GcWatch,
  Inspector,
  StallWatch,
  cpuByThread,
  printCpuProfile,
  printHeapProfile,
  printStalls,
  threadTimes,
} from './register-probes.js';

const RATES = (process.argv[2] ?? '500,1000,2000,3000').split(',').map(Number);
const SECONDS = Number(process.argv[3] ?? 10);
const USERS = Number(process.argv[4] ?? 2000);
const MODE = process.argv[5] === 'new' ? 'new' : 'refresh';
const ACCOUNTS = Math.max(1, Math.ceil(USERS / 200));
const TOP = Number(process.env.SQL_TOP ?? 12);
const SHIFT = Number(process.env.BENCH_PORT_SHIFT ?? 0);
const PORTS = Object.fromEntries(
  Object.entries({ http: 22680, sip: 22665, ng: 22628, dtmf: 22629, rtpMin: 31000, rtpMax: 31099, phones: 22661 }).map(
    ([k, v]) => [k, v + SHIFT],
  ),
) as Record<'http' | 'sip' | 'ng' | 'dtmf' | 'rtpMin' | 'rtpMax' | 'phones', number>;
/** A Kamailio registrar run's results file (its `registrar c=1 r=...` lines), re-run by hand on this box: optional. */
const ANCHOR_FILE = process.env.SIMU_BENCH_KAMAILIO_REGISTRAR ?? '';

const ctx = await startTestSwitch({
  ...PORTS,
  env: {
    SIMU_SIP_FLOOD_MAX_REQUESTS: '1000000',
    SIMU_SIP_FLOOD_WINDOW_SECONDS: '1',
    SIMU_SIP_KEEPALIVE_SECONDS: process.env.KEEPALIVE ?? '0',
    ...(process.env.UDP_FRONT !== undefined && { SIMU_OVERLOAD_UDP_FRONT: process.env.UDP_FRONT }),
  },
});
const dir = mkdtempSync(path.join(os.tmpdir(), 'register-bench-'));
const csv = path.join(dir, 'phones.csv');
const made = Date.now();
writeFileSync(csv, await makePhones(ctx.db, loadServerSecret(ctx.config.dataDir)));
console.error(`${USERS} end-users with phone tokens in ${ACCOUNTS} accounts, ${Date.now() - made} ms`);
const scenario = path.join(dir, 'register.xml');
writeFileSync(scenario, scenarioXml(MODE));

let statements = 0;
const bySql = new Map<string, { n: number; ms: number }>();
const started = new Map<string, { shape: string; at: number }>();
// Shapes remembered by text: the switch's statements are a few fixed texts, and the regexes over a 64-row insert's
// text for every statement were the bench's own cost, counted in the switch's CPU.
const shapes = new Map<string, string>();
const shapeOf = (sql: string) => {
  let shape = shapes.get(sql);
  if (shape === undefined) {
    shape = sql
      .replace(/\s+/g, ' ')
      .replace(/\(\?(, \?)*\)/g, '(?)')
      .slice(0, 110);
    if (shapes.size < 10_000) shapes.set(sql, shape);
  }
  return shape;
};
ctx.db.on('query', (q: { sql: string; __knexQueryUid: string }) => {
  statements++;
  const shape = shapeOf(q.sql);
  const s = bySql.get(shape) ?? { n: 0, ms: 0 };
  s.n++;
  bySql.set(shape, s);
  started.set(q.__knexQueryUid, { shape, at: performance.now() });
});
// From the statement handed to the driver to its answer (on SQLite, synchronous: about its run time).
const answered = (_r: unknown, q: { __knexQueryUid: string }) => {
  const s = started.get(q.__knexQueryUid);
  if (!s) return;
  started.delete(q.__knexQueryUid);
  bySql.get(s.shape)!.ms += performance.now() - s.at;
};
ctx.db.on('query-response', answered);
ctx.db.on('query-error', (_e: unknown, q: { __knexQueryUid: string }) => answered(undefined, q));
const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();
const gc = new GcWatch();

const anchors = kamailioAnchors();
const rows: string[] = [];
const threads: string[] = [];
// Every phone's first registration (new bindings, AUTH.0200 each), then the steps: refreshes (or new contacts).
rows.push(await step(Math.min(500, USERS), USERS, 'first'));
const probe = new Inspector();
if (process.env.BENCH_PROFILE) await probe.startCpu();
if (process.env.BENCH_HEAP_PROFILE) await probe.startHeap(process.env.BENCH_HEAP_PROMOTED === '1');
const stalls = process.env.BENCH_STALLS ? new StallWatch(gc, Number(process.env.BENCH_STALLS)) : undefined;
for (const rate of RATES) rows.push(await step(rate, rate * SECONDS));
stalls?.stop();
const profile = process.env.BENCH_PROFILE ? await probe.stopCpu() : undefined;
const heap = process.env.BENCH_HEAP_PROFILE ? await probe.stopHeap() : undefined;

console.log(
  `\nregister bench: ${USERS} phones in ${ACCOUNTS} accounts, mode ${MODE}, SQLite, ${SECONDS} s per step, ` +
    `keep-alives ${process.env.KEEPALIVE ? `every ${process.env.KEEPALIVE} s` : 'off'}, ` +
    `UDP front ${ctx.sw.sip?.ua.udpFront ? 'on' : 'off'}, ` +
    `${os.cpus().length}-core box, load ${os.loadavg()[0]?.toFixed(1)} at end`,
);
console.log(
  'flow: SIPp REGISTER -> 401 (digest challenge) -> REGISTER + Authorization (MD5, token short form) -> 200\n',
);
console.log(
  '| offered | registrations | done (200) | failed | REGISTER->401 p50/p99 ms | REGISTER->200 p50/p99 ms | switch CPU ms/reg (sys) | main thread CPU ms/reg, waiting for a core ms/s | GC ms/reg, longest | loop delay p99 / max ms | UDP drops at the switch / SIPp retransmissions | SQL/reg | Kamailio at this rate (anchor) |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
// Every phone here is 127.0.0.1: a ban (failed authentications) would fail every later registration.
const bans = await ctx.db('ip_bans').count({ n: '*' });
console.log(`\nsource bans during the run: ${Number(bans[0]?.n ?? 0)}`);
if (ANCHOR_FILE) console.log(`\nKamailio registrar anchor (${ANCHOR_FILE}):`);
for (const a of anchors.values()) console.log(`  ${a.line}`);
const regs = USERS + RATES.reduce((n, r) => n + r * SECONDS, 0);
console.log(`\nSQL statements by shape, per registration (all steps, ${regs}), the ${TOP} most frequent:\n`);
console.log('| per reg | µs each, query to answer | statement |');
console.log('|---|---|---|');
for (const [shape, { n, ms }] of [...bySql].sort((a, b) => b[1].n - a[1].n).slice(0, TOP))
  console.log(`| ${(n / regs).toFixed(3)} | ${((1000 * ms) / n).toFixed(0)} | \`${shape.replace(/\|/g, '\\|')}\` |`);
if (threads.length > 0) console.log(`\nother threads' CPU, ms per registration, by step: ${threads.join('; ')}`);
if (profile) printCpuProfile(profile, process.env.BENCH_PROFILE!);
if (heap) printHeapProfile(heap, process.env.BENCH_HEAP_PROFILE!, regs - USERS);
if (stalls) printStalls(stalls.stalls, profile);
await ctx.sw.stop();
process.exit(0);

async function step(rate: number, count: number, label = ''): Promise<string> {
  const out = mkdtempSync(path.join(dir, `r${rate}-`));
  const cpu0 = process.cpuUsage();
  const threads0 = threadTimes();
  const began = performance.now();
  const sql0 = statements;
  loop.reset();
  gc.ms = 0;
  gc.max = 0;
  const drops0 = udpDrops(PORTS.sip);
  const phones = spawn(
    'sipp',
    [
      `127.0.0.1:${PORTS.sip}`,
      '-sf',
      scenario,
      '-inf',
      csv,
      '-i',
      '127.0.0.1',
      '-p',
      String(PORTS.phones),
      '-r',
      String(rate),
      '-m',
      String(count),
      '-l',
      process.env.LIMIT ?? String(rate * 5),
      // 4 MB like the switch's socket: real phones each have a socket of their own, and SIPp's default 64 KB one
      // overflowed on a burst of answers (drops, each a retransmission 500 ms later, counted in the p99).
      '-buff_size',
      String(4 * 1024 * 1024),
      '-recv_timeout',
      '5000',
      '-timeout',
      `${SECONDS + 60}s`,
      '-nostdin',
      '-trace_rtt',
      '-rtt_freq',
      '1',
      '-trace_stat',
      '-fd',
      '1',
      '-trace_err',
      ...(process.env.SIPP_TRACE ? ['-trace_msg'] : []),
    ],
    { cwd: out, stdio: 'ignore' },
  );
  await exited(phones, (count / rate) * 1000 + 70_000);
  await quiet(); // the switch's writes that the last registrations started
  const cpu = process.cpuUsage(cpu0);
  const byThread = cpuByThread(threads0, threadTimes());
  const seconds = (performance.now() - began) / 1000;
  const sql = statements - sql0;
  const loopP99 = loop.percentile(99) / 1e6;
  const loopMax = loop.max / 1e6;

  const stat = lastCsvRow(out);
  const done = Number(stat.get('SuccessfulCall(C)') ?? 0);
  const failed = Number(stat.get('FailedCall(C)') ?? 0);
  const retransmitted = Number(stat.get('Retransmissions(C)') ?? 0);
  const rtt = rttOf(out);
  const q = (xs: number[], p: number) =>
    xs.length === 0
      ? '-'
      : xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(0);
  const per = Math.max(1, done);
  const switchMs = (cpu.user + cpu.system) / 1000 / per;
  const sysMs = cpu.system / 1000 / per;
  const drops = udpDrops(PORTS.sip) - drops0;
  const gcCol = `${(gc.ms / per).toFixed(3)}, ${gc.max.toFixed(0)}`;
  const a = anchors.get(rate);
  const anchor = a ? `${a.failed} failed, p50/p99 ${a.p50}/${a.p99} ms` : '-';
  const pct = ((100 * failed) / Math.max(1, count)).toFixed(2);
  const mainCol = `${(byThread.mainMs / per).toFixed(3)}, ${(byThread.mainWaitMs / seconds).toFixed(0)}`;
  threads.push(
    `${label ? `${label}: ` : ''}${rate}/s ` +
      byThread.others
        .filter((t) => t.ms / per >= 0.005)
        .map((t) => `${t.name} ${(t.ms / per).toFixed(3)}`)
        .join(', '),
  );
  return `| ${label ? `${label}: ` : ''}${rate}/s | ${count} | ${done} | ${failed} (${pct} %) | ${q(rtt[1], 50)} / ${q(rtt[1], 99)} | ${q(rtt[2], 50)} / ${q(rtt[2], 99)} | ${switchMs.toFixed(2)} (${sysMs.toFixed(2)}) | ${mainCol} | ${gcCol} | ${loopP99.toFixed(1)} / ${loopMax.toFixed(0)} | ${drops} / ${retransmitted} | ${(sql / per).toFixed(2)} | ${anchor} |`;
}

/** The end-users and their tokens, as the API creates them; returns SIPp's injection file (extension, domain, auth). */
async function makePhones(db: Db, secret: string): Promise<string> {
  const lines = ['SEQUENTIAL'];
  const perAccount = Math.ceil(USERS / ACCOUNTS);
  for (let a = 0; a < ACCOUNTS; a++) {
    const account = await insertAccount(db, `bench-${a}`);
    for (let i = 0; i < perAccount && a * perAccount + i < USERS; i++) {
      const user = await insertEndUser(db, account.id, `phone-${a}-${i}@bench.test`, `Phone ${i}`);
      // SIPp reads a password starting with 0x as hex (about 1 token in 4,000): such a phone gets another token.
      let password = '';
      while (!password || password.startsWith('0x')) password = await mint(db, secret, user);
      const ext = user.extension_number;
      lines.push(`${ext};${account.id}.sip.bench;[authentication username=${ext} password=${password}]`);
    }
  }
  return lines.join('\n') + '\n';
}

/** A phone token for the end-user, as POST /api/phone-tokens/mint makes it; returns its short form. */
async function mint(db: Db, secret: string, user: EndUserRow): Promise<string> {
  const issuedAt = Math.floor(Date.now() / 1000);
  const expiresAt = issuedAt + 86_400;
  const row = await insertPhoneToken(db, {
    account_id: user.account_id,
    end_user_id: user.id,
    extension_number: user.extension_number,
    max_concurrent: 1,
    expires_at: new Date(expiresAt * 1000).toISOString(),
    issued_at: issuedAt,
  });
  const claims = {
    tokenId: row.id,
    accountId: user.account_id,
    endUserId: user.id,
    extension: user.extension_number,
    maxConcurrent: row.max_concurrent,
    expiresAt,
  };
  return shortPassword(await signPhoneToken(secret, claims, issuedAt));
}

/**
 * One SIPp call = one registration. Timer 1: REGISTER -> 401; timer 2: first REGISTER -> 200 (the whole
 * registration, as the anchor's RTD 2). field0 = extension, field1 = account (the domain), field2 = credentials.
 */
function scenarioXml(mode: 'refresh' | 'new'): string {
  const contact = `<sip:[field0]@[local_ip]:[local_port]${mode === 'new' ? ';line=[call_number]' : ''}>`;
  const register = (cseq: number, auth: string) => `
      REGISTER sip:[field1] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: <sip:[field0]@[field1]>;tag=[pid]reg[call_number]
      To: <sip:[field0]@[field1]>
      Call-ID: [call_id]
      CSeq: ${cseq} REGISTER
      Contact: ${contact}${auth}
      Max-Forwards: 70
      Expires: 3600
      User-Agent: simu-register-bench
      Content-Length: 0
`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="register with digest (bench)">
  <send retrans="500"><![CDATA[
${register(1, '')}
    ]]></send>
  <recv response="401" auth="true" rtd="1"/>
  <send retrans="500"><![CDATA[
${register(2, '\n      [field2]')}
    ]]></send>
  <recv response="200" rtd="2"/>
</scenario>
`;
}

/** Datagrams the kernel dropped so far for a full receive buffer at the sockets bound to `port` (/proc/net/udp). */
function udpDrops(port: number): number {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let n = 0;
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols[1]?.endsWith(hex)) n += Number(cols[12] ?? 0);
  }
  return n;
}

/** Waits until no statement has run for 300 ms (at most 15 s). */
async function quiet(): Promise<void> {
  const until = Date.now() + 15_000;
  let last = -1;
  while (Date.now() < until && statements !== last) {
    last = statements;
    await new Promise((r) => setTimeout(r, 300));
  }
}

function exited(proc: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** SIPp's -trace_stat file: the last row, by column name. */
function lastCsvRow(out: string): Map<string, string> {
  const file = readdirSync(out).find((f) => f.endsWith('.csv') && !f.includes('_rtt') && !f.includes('counts'));
  if (!file) return new Map();
  const lines = readFileSync(path.join(out, file), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines[lines.length - 1]!.split(';');
  return new Map(head.map((h, i) => [h, last[i] ?? '']));
}

/** -trace_rtt: "Date_ms;response_time_ms;rtd_no" rows, by timer. */
function rttOf(out: string): Record<number, number[]> {
  const res: Record<number, number[]> = { 1: [], 2: [] };
  for (const f of readdirSync(out).filter((n) => n.endsWith('_rtt.csv'))) {
    for (const line of readFileSync(path.join(out, f), 'utf8').split('\n').slice(1)) {
      const cols = line.split(';');
      const ms = Number(cols[1]);
      const rtd = Number(cols[2]);
      if (Number.isFinite(ms) && (rtd === 1 || rtd === 2)) res[rtd]!.push(ms);
    }
  }
  return res;
}

/** The anchor's registrar lines by rate: `registrar c=1 r=4000 ... failed=0 (0.000%) ... rt_ms_p50/p95/p99/max=0/4/8/520`. */
function kamailioAnchors(): Map<number, { line: string; failed: string; p50: string; p99: string }> {
  const out = new Map<number, { line: string; failed: string; p50: string; p99: string }>();
  if (!ANCHOR_FILE || !existsSync(ANCHOR_FILE)) return out;
  for (const line of readFileSync(ANCHOR_FILE, 'utf8').split('\n')) {
    const r = /\br=(\d+)/.exec(line);
    const f = /failed=(\d+ \([\d.]+%\))/.exec(line);
    const t = /rt_ms_p50\/p95\/p99\/max=(\d+)\/\d+\/(\d+)\//.exec(line);
    if (r && f && t)
      out.set(Number(r[1]), { line: line.trim().replace(/\s+/g, ' '), failed: f[1]!, p50: t[1]!, p99: t[2]! });
  }
  return out;
}
