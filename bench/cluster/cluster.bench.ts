/**
 * The cluster as a carrier reaches it: a SIPp carrier sends INVITEs to a DID through Kamailio
 * (deploy/kamailio/kamailio.cfg), which spreads them over the nodes; each node fetches the account's webhook (a
 * trivial server in its own process), which answers `<Dial><Number>`, places the PSTN leg on the trunk to a second
 * SIPp that answers and hangs up after HOLD_MS, with the media anchored in the node's own rtpengine; the nodes share
 * one PostgreSQL. The same steps run with one node in the front's set, then with three, in one run.
 *
 * Per step: offered, completed, refused with 503 (overload), failed, INVITE->200 p50/p99 (SIPp's timers), and the CPU
 * each component spent per completed call (utime + stime from /proc/<pid>/stat before and after the step): Kamailio's
 * processes, each node, each node's rtpengine, PostgreSQL's processes, the webhook server; and how the front spread
 * the calls over the nodes (their CDRs).
 *
 *   npx tsx bench/cluster/cluster.bench.ts [rates=25,50,100] [seconds=10] [nodes=1,3]
 *
 * Every process it starts is its own (and stopped by PID at the end); ports come from the tests' port blocks.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort, nextPorts } from '../../test/support/ports.js';
import { addCarrier, allocateSwitchPorts, createAccountWithDid } from '../../test/e2e/support/harness.js';
import { KamailioFront } from '../../test/e2e/support/kamailio-front.js';
import {
  freshPostgresStore,
  killSwitch,
  processEnv,
  startSwitch,
  type SwitchProcess,
} from '../../test/e2e/support/switch-process.js';
import { startWebhookServer } from '../webhook-server.js';

const RATES = (process.argv[2] ?? '25,50,100').split(',').map(Number);
const SECONDS = Number(process.argv[3] ?? 10);
const SIZES = (process.argv[4] ?? '1,3').split(',').map(Number);
/** How long the callee holds each call (ms): 1 s, as the Kamailio + rtpengine anchor's calls. */
const HOLD_MS = Number(process.env.HOLD_MS ?? 1000);
const E2E_SCENARIOS = path.join(import.meta.dirname, '..', '..', 'test', 'e2e', 'support', 'scenarios');
/** The front's address: not the carrier's, so the nodes read the carrier from the front's Via. */
const FRONT_HOST = '127.0.0.2';
/** SIPp names its files after the scenario. */
const CALLER = 'uac-front-or-503_';
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
/** SIPp processes still running: killed if the bench exits first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

const { url, db } = await freshPostgresStore('simu_cluster_bench');
const hook = await startWebhookServer();
const trunkPort = nextPort();
await addCarrier(db, trunkPort, 'carrier', undefined, ['127.0.0.1']);
const acct = await createAccountWithDid(db, '+254711900003', 1_000_000_000);
await db('numbers').where({ number: acct.did }).update({ webhook_voice_inbound: hook.url });
await db('accounts').where({ id: acct.id }).update({ max_concurrent_calls: 100000, max_cps: 100000 });

// Each node relays media on an address of its own, as on its own host, so all three can use one wide range (the
// production default): rtpengine keeps a call's ports a while after it ends.
const nodes = Array.from({ length: Math.max(...SIZES) }, (_, i) => ({
  id: `bench-${i + 1}`,
  media: `127.0.0.${11 + i}`,
  ports: allocateSwitchPorts({ rtpMin: 30000, rtpMax: 60000 }),
  sw: undefined as SwitchProcess | undefined,
}));
for (const n of nodes) {
  n.sw = await startSwitch(
    processEnv(n.ports, {
      SIMU_DATABASE_URL: url,
      SIMU_NODE_ID: n.id,
      SIMU_SIP_TRUSTED_FRONTS: FRONT_HOST,
      SIMU_RTPENGINE_INTERFACE: n.media,
      // Overload control at its production defaults (the test harness turns it off), unless the bench is told.
      SIMU_OVERLOAD_LOOP_DELAY_MS: process.env.SIMU_OVERLOAD_LOOP_DELAY_MS ?? '40',
      SIMU_OVERLOAD_STORE_WAIT_MS: process.env.SIMU_OVERLOAD_STORE_WAIT_MS ?? '100',
    }),
    60_000,
  );
}
const pgPort = Number(new URL(url).port);

const rows: string[] = [];
let front: KamailioFront | undefined;
try {
  for (const size of SIZES) {
    front = await KamailioFront.start({
      host: FRONT_HOST,
      port: nextPort(),
      nodePorts: nodes.slice(0, size).map((n) => n.ports.sip),
    });
    // A few calls first, unreported: each node's code compiled and its connections (store, webhook) open.
    await step(front, size, 5, 4);
    for (const rate of RATES) rows.push(await step(front, size, rate, SECONDS));
    front.stop();
    front = undefined;
  }
} finally {
  front?.stop();
}

console.log(
  `\ncluster bench: ${RATES.map((r) => `${r}/s`).join(', ')} for ${SECONDS} s each, through Kamailio ` +
    `(2 workers a transport) with ${SIZES.join(' then ')} node(s) in its set; ${os.cpus().length}-core box, ` +
    `load ${os.loadavg()[0]?.toFixed(1)} at end`,
);
console.log(
  `flow: SIPp INVITE -> Kamailio -> node -> webhook -> <Dial><Number> -> trunk -> SIPp answers, BYE after ` +
    `${HOLD_MS / 1000} s; media anchored in each node's rtpengine; one PostgreSQL\n`,
);
const cpuHead = [
  'Kamailio',
  ...nodes.map((n) => n.id),
  ...nodes.map((_, i) => `rtpengine-${i + 1}`),
  'PostgreSQL',
  'webhook',
];
console.log(
  `| nodes | offered | completed | refused 503 | failed | INVITE->200 p50/p99 ms | ${cpuHead.map((h) => `${h} CPU ms/call`).join(' | ')} | total CPU ms/call | calls by node |`,
);
console.log(`|${'---|'.repeat(8 + cpuHead.length)}`);
for (const r of rows) console.log(r);
const live = await db('calls').whereIn('status', ['initiated', 'ringing', 'answered']).count({ n: '*' }).first();
console.log(`\ncalls still live in the store at the end: ${Number(live?.n ?? 0)}`);
hook.proc.kill();
for (const n of nodes) await killSwitch(n.sw, n.ports.ng);
await db.destroy();
process.exit(0);

async function step(front: KamailioFront, size: number, rate: number, seconds: number): Promise<string> {
  const calls = rate * seconds;
  const dir = mkdtempSync(path.join(os.tmpdir(), `cluster-bench-${size}-${rate}-`));
  const callee = sipp(dir, [
    ...['-sf', path.join(E2E_SCENARIOS, 'uas-answer-hangup.xml'), '-key', 'media_sink', '9'],
    ...['-d', String(HOLD_MS), '-i', '127.0.0.1', '-p', String(trunkPort), '-mp', String(nextPorts(4))],
    ...['-max_socket', '5000'],
  ]);
  await new Promise((r) => setTimeout(r, 500));
  const since = new Date().toISOString();
  const components = componentPids(front);
  const before = components.map(([, pids]) => ticksOf(pids));
  const caller = sipp(dir, [
    `${FRONT_HOST}:${front.o.port}`,
    ...['-sf', path.join(import.meta.dirname, 'uac-front-or-503.xml'), '-s', acct.did.slice(1)],
    ...['-i', '127.0.0.1', '-p', String(nextPort()), '-mp', String(nextPorts(4))],
    ...['-r', String(rate), '-m', String(calls), '-l', String(rate * (5 + Math.ceil(HOLD_MS / 1000)))],
    ...['-trace_rtt', '-rtt_freq', '1', '-trace_stat', '-fd', '1', '-trace_counts'],
  ]);
  await exited(caller, seconds * 1000 + HOLD_MS + 40_000);
  const after = components.map(([, pids]) => ticksOf(pids));
  callee.kill('SIGKILL');

  const stat = lastCsvRow(dir);
  // A 503 without Retry-After (the front's own, with no node in its set) counts as failed as well as refused.
  const failed = Number(stat.get('FailedCall(C)') ?? 0);
  const refused = countOf(dir, '503');
  const completed = countOf(dir, '200');
  const answered = rttOf(dir);
  const q = (p: number) =>
    answered.length === 0 ? '-' : answered[Math.min(answered.length - 1, Math.floor((p / 100) * answered.length))]!;
  const perCall = components.map((_, i) => ((after[i]! - before[i]!) * 1000) / CLK_TCK / Math.max(1, completed));
  const byNode = (await db('calls')
    .where({ account_id: acct.id, direction: 'inbound' })
    .where('created_at', '>=', since)
    .select('node_id')
    .count({ n: '*' })
    .groupBy('node_id')
    .orderBy('node_id')) as Array<{ node_id: string; n: string | number }>;
  // The next step starts on a quiet cluster: every call of this one ended.
  for (let i = 0; i < 300; i++) {
    const open = await db('calls').whereIn('status', ['initiated', 'ringing', 'answered']).count({ n: '*' }).first();
    if (Number(open?.n ?? 0) === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 2000));
  return (
    `| ${size} | ${rate}/s × ${seconds} s = ${calls} | ${completed} | ${refused} | ${failed} | ${q(50)} / ${q(99)} | ` +
    `${perCall.map((ms) => ms.toFixed(2)).join(' | ')} | ${perCall.reduce((a, b) => a + b, 0).toFixed(2)} | ` +
    `${byNode.map((r) => `${r.node_id}: ${r.n}`).join(', ')} |`
  );
}

/** The processes of each component, in the table's order (a node is its own process; rtpengine is its child). */
function componentPids(front: KamailioFront): Array<[string, number[]]> {
  const procs = processTable();
  const rtpengine = (ng: number) =>
    [...procs].filter(([, p]) => p.comm === 'rtpengine' && p.cmdline.includes(`--listen-ng=127.0.0.1:${ng}`));
  const postmasters = [...procs].filter(
    ([, p]) => p.comm === 'postgres' && new RegExp(`-p\\s${pgPort}\\s`).test(p.cmdline),
  );
  return [
    ['Kamailio', front.pids()],
    ...nodes.map((n): [string, number[]] => [n.id, n.sw?.proc.pid ? [n.sw.proc.pid] : []]),
    ...nodes.map((n, i): [string, number[]] => [`rtpengine-${i + 1}`, rtpengine(n.ports.ng).map(([pid]) => pid)]),
    ['PostgreSQL', postmasters.flatMap(([pid]) => [pid, ...descendants(procs, pid)])],
    ['webhook', hook.proc.pid ? [hook.proc.pid] : []],
  ];
}

/** utime + stime of the processes (clock ticks); one that exited meanwhile counts nothing. */
function ticksOf(pids: number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      sum += Number(f[11]) + Number(f[12]);
    } catch {
      // gone
    }
  }
  return sum;
}

type Proc = { ppid: number; comm: string; cmdline: string };

function processTable(): Map<number, Proc> {
  const out = new Map<number, Proc>();
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ');
      out.set(Number(name), { ppid: Number(f[1]), comm, cmdline });
    } catch {
      // gone
    }
  }
  return out;
}

function descendants(procs: Map<number, Proc>, root: number): number[] {
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const at = todo.pop()!;
    for (const [pid, p] of procs)
      if (p.ppid === at) {
        out.push(pid);
        todo.push(pid);
      }
  }
  return out;
}

function sipp(cwd: string, args: string[]): ChildProcess {
  // 4 MB socket buffers, as the carrier bench: the peers stand for carriers' SBCs, which do not drop a burst.
  const proc = spawn('sipp', [...args, '-nostdin', '-buff_size', String(4 << 20), '-timeout', `${SECONDS + 60}s`], {
    cwd,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  return proc;
}

function exited(proc: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** SIPp's -trace_stat file: the last row, by column name. */
function lastCsvRow(dir: string): Map<string, string> {
  const file = readdirSync(dir).find(
    (f) => f.startsWith(CALLER) && f.endsWith('_.csv') && !f.includes('counts') && !f.includes('rtt'),
  );
  if (!file) return new Map();
  const lines = readFileSync(path.join(dir, file), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines.at(-1)!.split(';');
  return new Map(head.map((h, i) => [h, last[i] ?? '']));
}

/** From -trace_counts: how many responses with this status SIPp received. */
function countOf(dir: string, status: string): number {
  const file = readdirSync(dir).find((f) => f.startsWith(CALLER) && f.endsWith('_counts.csv'));
  if (!file) return 0;
  const lines = readFileSync(path.join(dir, file), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines.at(-1)!.split(';');
  const i = head.findIndex((h) => new RegExp(`^\\d+_${status}_Recv$`).test(h));
  return i < 0 ? 0 : Number(last[i] ?? 0);
}

/** INVITE->200 times (ms, SIPp's timer 2), sorted. */
function rttOf(dir: string): number[] {
  const out: number[] = [];
  for (const f of readdirSync(dir).filter((n) => n.startsWith(CALLER) && n.endsWith('_rtt.csv')))
    for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n').slice(1)) {
      const cols = line.split(';');
      if (Number(cols[2]) === 2 && Number.isFinite(Number(cols[1]))) out.push(Number(cols[1]));
    }
  return out.sort((a, b) => a - b);
}
