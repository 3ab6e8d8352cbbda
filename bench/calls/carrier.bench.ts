/**
 * The carrier's reality, measured from outside: a SIPp carrier sends INVITEs to a DID, the account's voice_inbound
 * webhook (a trivial server in its own process) answers `<Dial><Number>`, the PSTN leg goes out on the trunk to a
 * second SIPp that answers, media is anchored in rtpengine, the callee hangs up after one second and the switch
 * then ends the caller's leg. The switch runs in this process (its CPU is this process's, less a little for the
 * bench's own bookkeeping); rtpengine is its supervised child.
 *
 * Per step: offered rate, completed, refused with 503 (overload), failed, INVITE->180 and INVITE->200 p50/p99 (SIPp's
 * own timers; INVITE->200 p99 also without the step's first 3 s), switch and rtpengine CPU ms per call, event-loop delay
 * p99, SQL statements per call. STEP_TIMELINE=1 adds each step's INVITE->200 by second. STATUS_CALLBACKS=1 gives the
 * account a status URL on the same local server, so each call's events also go out as signed status callbacks
 * through the outbox (what most customers configure); the run then waits for the outbox to catch up (up to DRAIN_S
 * seconds, 120 by default) and says how long it took, how many requests the server got over how many TCP
 * connections, and what the outbox holds at the end. AMD=1 puts answering machine detection on every call:
 * the document dials `<Number machineDetection="Enable" amdStatusCallback=...>`, the callee speaks ("Hello?", made
 * with espeak-ng here) from its own media port, the detector hears a copy of it (rtpengine's subscription) and the
 * verdict goes to the local server through the outbox; the run then gives the verdicts stored and the callbacks
 * received. The callee holds 3 s by default then (a verdict on "Hello?" takes about 1.5 s).
 *
 *   npx tsx bench/calls/carrier.bench.ts [rates=10,25,50] [seconds=10] [store=sqlite|postgres]
 *
 * A step may carry its own length, `rate@seconds`: `200@30,75@30` offers twice the capacity for 30 s, then a normal
 * load for 30 s straight after (the switch's return to normal). SIMU_OVERLOAD_UDP_FRONT=true receives SIP over UDP
 * in the worker thread that refuses the excess (sip/stack/transport/udp-front.ts), the default; false receives it on
 * the main thread.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { startTestSwitch, createAccountWithDid, addCarrier } from '../../test/e2e/support/harness.js';
import { killSwitch, startSwitch, type SwitchProcess } from '../../test/e2e/support/switch-process.js';
import {
  groupCommitStats,
  migrate,
  openDb,
  probeStoreQueue,
  setRate,
  timeStatements,
  type Db,
} from '../../store/index.js';
import type { Switch } from '../../switch.js';
import { startWebhookServer } from '../webhook-server.js';

const SECONDS = Number(process.argv[3] ?? 10);
const STEPS = (process.argv[2] ?? '10,25,50').split(',').map((s) => {
  const [rate, seconds] = s.split('@').map(Number);
  return { rate: rate!, seconds: seconds ?? SECONDS };
});
const STORE = process.argv[4] ?? 'sqlite';
// The "from 3 s" column leaves out the calls answered in a step's first seconds: the process warming up (code not yet
// optimised, connections to the webhook still being opened) or overload control not yet limiting a sudden flood.
const WARM_MS = 3000;
// HOLD_MS: how long the callee holds each call (1 s by default). Carriers' calls last minutes: a longer hold shows
// what grows with the calls in progress (admission's count of live calls, credit heartbeats, rtpengine's tables).
const AMD = process.env.AMD === '1';
const HOLD_MS = Number(process.env.HOLD_MS ?? (AMD ? 3000 : 1000));
// How many statement shapes to list (SQL_TOP=40 for a full picture).
const TOP = Number(process.env.SQL_TOP ?? 15);
const E2E_SCENARIOS = path.join(import.meta.dirname, '..', '..', 'test', 'e2e', 'support', 'scenarios');
// BENCH_PORT_SHIFT=N moves every port by N, so two runs can share the box (RTP ranges overlap below a shift of 10000).
const SHIFT = Number(process.env.BENCH_PORT_SHIFT ?? 0);
const PORTS = Object.fromEntries(
  Object.entries({
    http: 22580,
    sip: 22565,
    ng: 22528,
    rtpMin: 30000, // rtpengine's ports: the production default range (SIMU_RTP_PORT_MIN/MAX)
    rtpMax: 60000,
    carrierIn: 22561,
    carrierOut: 22562,
    callerMedia: 22570,
    calleeMedia: 22590,
    dtmf: 22529,
  }).map(([k, v]) => [k, Math.min(v + SHIFT, 65535)]), // a shifted RTP range ends at the last port
) as Record<
  'http' | 'sip' | 'ng' | 'rtpMin' | 'rtpMax' | 'carrierIn' | 'carrierOut' | 'callerMedia' | 'calleeMedia' | 'dtmf',
  number
>;
const CHILD = process.env.SWITCH_PROCESS === 'compiled' || process.env.SWITCH_PROCESS === 'tsx';
const COMPILED = process.env.SWITCH_PROCESS === 'compiled';

// Loopback webhooks allowed; overload control at its production defaults (the test harness turns it off).
const env: Record<string, string> = {
  SIMU_WEBHOOK_ALLOW_PRIVATE: 'true',
  SIMU_OVERLOAD_LOOP_DELAY_MS: process.env.SIMU_OVERLOAD_LOOP_DELAY_MS ?? '40',
  SIMU_OVERLOAD_STORE_WAIT_MS: process.env.SIMU_OVERLOAD_STORE_WAIT_MS ?? '100',
  SIMU_OVERLOAD_INITIAL_CPS: process.env.SIMU_OVERLOAD_INITIAL_CPS ?? '50',
  SIMU_OVERLOAD_UDP_FRONT: process.env.SIMU_OVERLOAD_UDP_FRONT ?? 'true',
};
// Any other setting given to the bench reaches the switch (SIMU_PLATFORM_MAX_CPS=180, say).
for (const [k, v] of Object.entries(process.env)) if (k.startsWith('SIMU_') && v !== undefined) env[k] ??= v;
if (STORE === 'postgres') {
  const { startPostgres } = await import('../../test/support/postgres.js');
  env.SIMU_DATABASE_URL = await startPostgres();
}
// UDP_COUNT=1: datagrams the switch sends, by destination port (SIP to the carriers, ng to rtpengine, RTP).
const sendsByPort = new Map<number, number>();
const ngCommands = new Map<string, number>();
if (process.env.UDP_COUNT === '1') {
  const dgram = await import('node:dgram');
  const send = dgram.Socket.prototype.send;
  dgram.Socket.prototype.send = function (this: unknown, ...args: unknown[]) {
    const port = args.find((a, i) => i > 0 && typeof a === 'number' && a > 1000) as number | undefined;
    sendsByPort.set(port ?? 0, (sendsByPort.get(port ?? 0) ?? 0) + 1);
    const m = Buffer.isBuffer(args[0]) ? /7:command(\d+):/.exec(args[0].toString('latin1')) : null;
    if (m) {
      const text = (args[0] as Buffer).toString('latin1');
      const cmd = text.slice(m.index + m[0].length, m.index + m[0].length + Number(m[1]));
      sendsByPort.set(-cmd.length, (sendsByPort.get(-cmd.length) ?? 0) + 1);
      ngCommands.set(cmd, (ngCommands.get(cmd) ?? 0) + 1);
    }
    return (send as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof send;
}
/** The switch under test: in this process, or (SWITCH_PROCESS) a child whose store this process opens too. */
const ctx: { db: Db; dataDir: string; sw?: Switch; child?: SwitchProcess } = CHILD
  ? await childStore()
  : await startTestSwitch({ ...PORTS, env }).then((t) => ({ db: t.db, dataDir: t.config.dataDir, sw: t.sw }));
const acct = await createAccountWithDid(ctx.db, '+254711900002', 1_000_000_000);
const hook = await startWebhookServer({ amd: AMD });
await ctx.db('numbers').where({ number: acct.did }).update({ webhook_voice_inbound: hook.url });
await ctx.db('accounts').where({ id: acct.id }).update({ max_concurrent_calls: 100000, max_cps: 100000 });
const STATUS_CALLBACKS = process.env.STATUS_CALLBACKS === '1';
if (STATUS_CALLBACKS) await ctx.db('accounts').where({ id: acct.id }).update({ webhook_status: hook.statusUrl });
await addCarrier(ctx.db, PORTS.carrierOut, 'carrier-out', ctx.sw, ['127.0.0.1']);
let startMs = 0;
if (CHILD) {
  const began = performance.now();
  ctx.child = await startSwitch(
    {
      ...env,
      SIMU_DATA_DIR: ctx.dataDir,
      SIMU_HTTP_HOST: '127.0.0.1',
      SIMU_HTTP_PORT: String(PORTS.http),
      SIMU_SIP_HOST: '127.0.0.1',
      SIMU_SIP_PORT: String(PORTS.sip),
      SIMU_SIP_TLS_PORT: '0',
      SIMU_SIP_WS_PORT: '0',
      SIMU_SIP_WSS_PORT: '0',
      SIMU_RTPENGINE_NG_PORT: String(PORTS.ng),
      SIMU_RTPENGINE_DTMF_PORT: String(PORTS.dtmf),
      SIMU_RTP_PORT_MIN: String(PORTS.rtpMin),
      SIMU_RTP_PORT_MAX: String(PORTS.rtpMax),
      SIMU_WEBHOOK_TIMEOUT_MS: '3000',
      SIMU_LOG_LEVEL: process.env.SIMU_LOG_LEVEL ?? 'silent',
    },
    60_000,
    { compiled: COMPILED },
  );
  startMs = performance.now() - began;
}
const rtpenginePid = pidOf(`listen-ng=127.0.0.1:${PORTS.ng}`);
const calleeAudio = AMD ? personUlaw() : undefined;

let statements = 0;
// Counted by exact text while the bench runs (cheap: the switch's CPU is measured in this process); grouped by
// shape only when printed.
const bySqlText = new Map<string, number>();
if (!CHILD)
  ctx.db.on('query', (q: { sql: string }) => {
    statements++;
    if (process.env.SQL_TRACE === '1') console.log(`SQL ${q.sql.slice(0, 160)}`);
    bySqlText.set(q.sql, (bySqlText.get(q.sql) ?? 0) + 1);
  });
// SQL_TIMING=1: SQLite execution time by statement (the native work the profile shows under sqlite-connection.ts).
const nsBySqlText = new Map<string, number>();
if (process.env.SQL_TIMING === '1')
  timeStatements((sql, ns) => {
    nsBySqlText.set(sql, (nsBySqlText.get(sql) ?? 0) + ns);
    const xs = samplesBySqlText.get(sql) ?? [];
    if (xs.length < 20_000) xs.push(ns / 1000);
    samplesBySqlText.set(sql, xs);
    if (sql.startsWith('COMMIT')) commitTimes.push(ns / 1000);
  });
const commitTimes: number[] = [];
const samplesBySqlText = new Map<string, number[]>();
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

const rows: string[] = [];
let completedTotal = 0;
for (const { rate, seconds } of STEPS) rows.push(await step(rate, seconds));
const check = await storeCheck();

console.log(
  `\ncarrier bench: store ${STORE}, switch ${CHILD ? `in its own process (${COMPILED ? 'node dist/main.js' : 'tsx main.ts'}, started in ${startMs.toFixed(0)} ms)` : 'in the bench process (tsx)'}, steps ${STEPS.map((s) => `${s.rate}/s for ${s.seconds} s`).join(', ')}, UDP front ${env.SIMU_OVERLOAD_UDP_FRONT}, 2-core box, load ${os.loadavg()[0]?.toFixed(1)} at end`,
);
console.log(
  `flow: SIPp INVITE -> DID -> signed webhook -> <Dial><Number${AMD ? ' machineDetection="Enable"' : ''}> -> trunk -> SIPp answers${AMD ? ' and speaks' : ''}, BYE after ${HOLD_MS / 1000} s\n`,
);
console.log(
  '| offered | calls | completed | refused 503 | failed | INVITE->180 p50/p99 ms | INVITE->200 p50/p99 ms | INVITE->200 p99 from 3 s | INVITE->503 p50/p99 ms | switch CPU ms/call | rtpengine CPU ms/call | loop delay p99 ms | loop busy | store wait max ms | SQL/call | group commits/call |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
const calls = STEPS.reduce((n, s) => n + s.rate * s.seconds, 0);
console.log(`\nSQL statements by shape, per offered call (all steps, ${calls} calls), the ${TOP} most frequent:\n`);
console.log('| per call | statement |');
console.log('|---|---|');
// The statement's shape: what it does to which table, without its values.
const shapeOf = (sql: string) =>
  sql
    .replace(/\s+/g, ' ')
    .replace(/\(\?(, \?)*\)/g, '(?)')
    .slice(0, 110);
const byShape = (m: Map<string, number>) => {
  const out = new Map<string, number>();
  for (const [sql, n] of m) out.set(shapeOf(sql), (out.get(shapeOf(sql)) ?? 0) + n);
  return [...out].sort((a, b) => b[1] - a[1]).slice(0, TOP);
};
for (const [shape, n] of byShape(bySqlText))
  console.log(`| ${(n / calls).toFixed(2)} | \`${shape.replace(/\|/g, '\\|')}\` |`);
if (!CHILD) console.log(`\ngroup commit: ${JSON.stringify(groupCommitStats(ctx.db))}`);
if (sendsByPort.size > 0)
  console.log(
    `datagrams sent per call by destination port: ${[...sendsByPort]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([p, n]) => `${p}: ${(n / calls).toFixed(1)}`)
      .join(
        ', ',
      )}; ng commands per call: ${[...ngCommands].map(([c, n]) => `${c} ${(n / calls).toFixed(1)}`).join(', ')}`,
  );
for (const f of readdirSync(ctx.dataDir).filter((f) => f.startsWith('simu.db')))
  console.log(`${f}: ${(statSync(path.join(ctx.dataDir, f)).size / 1024).toFixed(0)} KiB`);
if (commitTimes.length > 0) {
  const sorted = [...commitTimes].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(0);
  const over1ms = sorted.filter((t) => t > 1000);
  console.log(
    `\ncommits: ${sorted.length}, p50 ${at(0.5)} µs, p90 ${at(0.9)}, p99 ${at(0.99)}, max ${at(1)}; over 1 ms: ${over1ms.length} totalling ${(over1ms.reduce((a, b) => a + b, 0) / 1000).toFixed(0)} ms of ${(sorted.reduce((a, b) => a + b, 0) / 1000).toFixed(0)} ms`,
  );
}
if (nsBySqlText.size > 0) {
  console.log(`\nSQLite execution time by statement shape, µs per offered call:\n`);
  console.log('| µs per call | p50 µs | p99 µs | statement |');
  console.log('|---|---|---|---|');
  const samples = new Map<string, number[]>();
  for (const [sql, xs] of samplesBySqlText) samples.set(shapeOf(sql), [...(samples.get(shapeOf(sql)) ?? []), ...xs]);
  for (const [shape, ns] of byShape(nsBySqlText)) {
    const xs = (samples.get(shape) ?? [0]).sort((a, b) => a - b);
    const at = (p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]!.toFixed(0);
    console.log(
      `| ${(ns / 1000 / calls).toFixed(1)} | ${at(0.5)} | ${at(0.99)} | \`${shape.replace(/\|/g, '\\|')}\` |`,
    );
  }
}
if (STATUS_CALLBACKS) {
  // The callbacks still queued when the last step ends are waited for (up to DRAIN_S, 120 s by default): the run
  // counts every callback delivered, and says how long the outbox took to catch up.
  const drainStart = performance.now();
  const drainLimit = drainStart + 1000 * Number(process.env.DRAIN_S ?? 120);
  // The state as a literal: the outbox's pending-rows index is partial, and a bound parameter cannot use it.
  const pending = async () =>
    Number((await ctx.db('event_outbox').whereRaw(`state = 'pending'`).count({ n: '*' }).first())?.n ?? 0);
  while ((await pending()) > 0 && performance.now() < drainLimit) await new Promise((r) => setTimeout(r, 200));
  console.log(
    `\nstatus callbacks pending after the last step: caught up in ${((performance.now() - drainStart) / 1000).toFixed(1)} s`,
  );
  const outbox: Array<{ state: string; n: number }> = await ctx
    .db('event_outbox')
    .select('state')
    .count({ n: '*' })
    .groupBy('state');
  console.log(`\nstatus callbacks: the outbox holds ${outbox.map((r) => `${r.state} ${r.n}`).join(', ')}`);
}
if (AMD) {
  const verdicts: Array<{ answered_by: string | null; n: number }> = await ctx
    .db('calls')
    .where({ account_id: acct.id, direction: 'outbound' })
    .whereNotNull('answered_at')
    .select('answered_by')
    .count({ n: '*' })
    .groupBy('answered_by');
  const amdRows: Array<{ state: string; n: number }> = await ctx
    .db('event_outbox')
    .where({ route: 'amd' })
    .select('state')
    .count({ n: '*' })
    .groupBy('state');
  console.log(
    `\nanswering machine detection: answered dialled legs by verdict ${verdicts.map((r) => `${r.answered_by ?? 'none'} ${r.n}`).join(', ')}; AMD callbacks in the outbox ${amdRows.map((r) => `${r.state} ${r.n}`).join(', ')}`,
  );
}
const served = (await (await fetch(hook.statsUrl)).json()) as { connections: number; byPath: Record<string, number> };
console.log(
  `webhook server: ${Object.entries(served.byPath)
    .map(([p, n]) => `${n} to ${p}`)
    .join(', ')} over ${served.connections} TCP connections`,
);
console.log('\nThe store after the run (nothing lost or half-written):\n');
console.log('| check | value |');
console.log('|---|---|');
for (const [k, v] of check) console.log(`| ${k} | ${v} |`);
hook.proc.kill();
if (ctx.child) {
  await killSwitch(ctx.child, PORTS.ng);
  await ctx.db.destroy();
} else await ctx.sw?.stop();
process.exit(0);

async function step(rate: number, seconds: number): Promise<string> {
  const calls = rate * seconds;
  const dir = mkdtempSync(path.join(os.tmpdir(), `carrier-bench-${rate}-`));
  const callee = sipp(dir, [
    '-sf',
    calleeAudio ? speakingCallee(dir, calleeAudio) : path.join(E2E_SCENARIOS, 'uas-answer-hangup.xml'),
    ...(calleeAudio ? ['-mp', String(PORTS.calleeMedia)] : []),
    '-key',
    'media_sink',
    '9',
    '-d',
    String(HOLD_MS),
    '-i',
    '127.0.0.1',
    '-p',
    String(PORTS.carrierOut),
    '-max_socket',
    '5000',
  ]);
  await new Promise((r) => setTimeout(r, 500));
  const cpu0 = switchCpuMs();
  const rtp0 = rtpengineTicks();
  const sql0 = statements;
  const commits0 = groupCommitStats(ctx.db)?.commits ?? 0;
  loop.reset();
  // The store's backlog as overload control sees it: the longest wait for a connection, sampled every 250 ms.
  const probe = probeStoreQueue(ctx.db);
  let storeWaitMax = 0;
  // The main thread's busy share (event-loop utilisation), the step's and each second's.
  const elu0 = performance.eventLoopUtilization();
  let eluAt = elu0;
  let ticks = 0;
  const busyBySecond: number[] = [];
  // Turns of the loop that held it over 30 ms, by when they ended (ms of the process, as --trace-gc stamps its lines):
  // to line the timeline's slow seconds up with collections and other work.
  const stepAt = performance.now();
  const stalls: string[] = [];
  let probeAt = performance.now();
  const stallProbe = setInterval(() => {
    const now = performance.now();
    if (now - probeAt > 40) stalls.push(`${Math.round(now)}:${Math.round(now - probeAt - 10)}`);
    probeAt = now;
  }, 10);
  const sampler = setInterval(() => {
    const q = probe.sample();
    storeWaitMax = Math.max(storeWaitMax, q.maxWaitMs, q.oldestWaitMs);
    if (++ticks % 4 === 0) {
      const now = performance.eventLoopUtilization();
      busyBySecond.push(performance.eventLoopUtilization(now, eluAt).utilization);
      eluAt = now;
    }
  }, 250);
  const caller = sipp(dir, [
    '-sf',
    callerScenario(dir),
    '-s',
    acct.did.slice(1),
    '-i',
    '127.0.0.1',
    '-p',
    String(PORTS.carrierIn),
    '-mp',
    String(PORTS.callerMedia), // SIPp binds its media sockets here even though no RTP is sent
    '-r',
    String(rate),
    '-m',
    String(calls),
    '-l',
    String(rate * (5 + Math.ceil(HOLD_MS / 1000))),
    '-trace_rtt',
    '-rtt_freq',
    '1',
    '-trace_stat',
    '-fd',
    '1',
    '-trace_counts',
    `127.0.0.1:${PORTS.sip}`,
  ]);
  await exited(caller, seconds * 1000 + HOLD_MS + 40_000);
  const cpuMs = switchCpuMs() - cpu0;
  const rtpMs = ((rtpengineTicks() - rtp0) * 1000) / 100; // clock ticks of 10 ms
  const sql = statements - sql0;
  const commitsDone = (groupCommitStats(ctx.db)?.commits ?? 0) - commits0;
  const loopP99 = loop.percentile(99) / 1e6;
  const loopBusy = performance.eventLoopUtilization(performance.eventLoopUtilization(), elu0).utilization;
  clearInterval(sampler);
  clearInterval(stallProbe);
  probe.close();
  callee.kill('SIGKILL');

  const stat = lastCsvRow(dir, '_.csv');
  const successful = Number(stat.get('SuccessfulCall(C)') ?? 0);
  const failed = Number(stat.get('FailedCall(C)') ?? 0);
  const refused = countOf(dir, '503');
  const completed = successful - refused;
  completedTotal += completed;
  const rtt = rttFiles(dir);
  const q = (xs: number[], p: number) =>
    xs.length === 0
      ? '-'
      : xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(0);
  const switchMs = cpuMs / Math.max(1, completed);
  if (process.env.STEP_TIMELINE === '1') {
    printTimeline(rate, rtt.answeredAt, q, busyBySecond);
    console.log(
      `stalls ${rate}/s (step began at ${Math.round(stepAt)} ms of the process; end:late ms): ${stalls.join(' ')}`,
    );
  }
  const settled = rtt.answeredAt.filter(([at]) => at >= WARM_MS).map(([, ms]) => ms);
  return `| ${rate}/s | ${calls} | ${completed} (${((100 * completed) / calls).toFixed(1)} %) | ${refused} | ${failed} | ${q(rtt[1], 50)} / ${q(rtt[1], 99)} | ${q(rtt[2], 50)} / ${q(rtt[2], 99)} | ${q(settled, 99)} | ${q(rtt[3], 50)} / ${q(rtt[3], 99)} | ${switchMs.toFixed(1)} | ${(rtpMs / Math.max(1, completed)).toFixed(2)} | ${inProcess(`${loopP99.toFixed(1)} | ${pct(loopBusy)} | ${storeWaitMax.toFixed(0)} | ${(sql / Math.max(1, completed)).toFixed(1)}`)} | ${!CHILD && groupCommitStats(ctx.db) ? (commitsDone / Math.max(1, completed)).toFixed(1) : '-'} |`;
}

/** The caller's scenario, waiting for the switch's BYE as long as the callee holds the call (and 15 s more). */
function callerScenario(dir: string): string {
  const xml = readFileSync(path.join(E2E_SCENARIOS, 'uac-inbound-or-503.xml'), 'utf8');
  const file = path.join(dir, 'uac-inbound-or-503.xml');
  writeFileSync(
    file,
    xml.replace('<recv request="BYE" timeout="15000" />', `<recv request="BYE" timeout="${HOLD_MS + 15000}" />`),
  );
  return file;
}

/** AMD=1: the callee's scenario, speaking `ulaw` from its own media port (uas-answer-speaks-hangup.xml). */
function speakingCallee(dir: string, ulaw: string): string {
  const file = path.join(dir, 'uas-answer-speaks-hangup.xml');
  const xml = readFileSync(path.join(import.meta.dirname, 'uas-answer-speaks-hangup.xml'), 'utf8');
  writeFileSync(file, xml.replaceAll('[audio]', ulaw));
  return file;
}

/** A person answering: a moment's silence, "Hello?" (espeak-ng), then silence, as raw mu-law. */
function personUlaw(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'carrier-bench-amd-'));
  const hello = path.join(dir, 'hello.wav');
  execFileSync('espeak-ng', ['-w', hello, 'Hello?']);
  const out = path.join(dir, 'person.ulaw');
  execFileSync('sox', ['-R', hello, '-r', '8000', '-c', '1', '-t', 'ul', out, 'pad', '0.4', '6']);
  return out;
}

function sipp(cwd: string, args: string[]): ChildProcess {
  return spawn(
    'sipp',
    // 4 MB socket buffers (SIPp's default is 128 KB): the peers stand for carriers' SBCs, which do not drop a burst
    // of answers, and each drop here (hundreds at 400/s) cost its call a retransmission's 0.5-2 s.
    [
      ...args,
      '-nostdin',
      '-buff_size',
      String(4 << 20),
      '-timeout',
      `${Math.max(...STEPS.map((s) => s.seconds)) + HOLD_MS / 1000 + 60}s`,
    ],
    {
      cwd,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
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
function lastCsvRow(dir: string, suffix: string): Map<string, string> {
  const file = readdirSync(dir).find(
    (f) => f.startsWith('uac-inbound-or-503_') && f.endsWith(suffix) && !f.includes('counts') && !f.includes('rtt'),
  );
  if (!file) return new Map();
  const lines = readFileSync(path.join(dir, file), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines[lines.length - 1]!.split(';');
  return new Map(head.map((h, i) => [h, last[i] ?? '']));
}

/** From -trace_counts: how many responses with this status SIPp received (the scenario's recv line for it). */
function countOf(dir: string, status: string): number {
  const file = readdirSync(dir).find((f) => f.startsWith('uac-inbound-or-503_') && f.endsWith('_counts.csv'));
  if (!file) return 0;
  const lines = readFileSync(path.join(dir, file), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines[lines.length - 1]!.split(';');
  // Columns are named like "6_503_Recv" (scenario index, message, direction).
  const i = head.findIndex((h) => new RegExp(`^\\d+_${status}_Recv$`).test(h));
  return i < 0 ? 0 : Number(last[i] ?? 0);
}

/**
 * -trace_rtt: "Date_ms;response_time_ms;rtd_no" rows, grouped by timer number; `answeredAt` pairs each INVITE->200
 * time with when it was measured (ms since SIPp started).
 */
function rttFiles(dir: string): Record<1 | 2 | 3, number[]> & { answeredAt: [number, number][] } {
  const out = { 1: [] as number[], 2: [] as number[], 3: [] as number[], answeredAt: [] as [number, number][] };
  for (const f of readdirSync(dir).filter((n) => n.startsWith('uac-inbound-or-503_') && n.endsWith('_rtt.csv'))) {
    for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n').slice(1)) {
      const cols = line.split(';');
      const ms = Number(cols[1]);
      const rtd = Number(cols[2]);
      if (!Number.isFinite(ms) || (rtd !== 1 && rtd !== 2 && rtd !== 3)) continue;
      out[rtd].push(ms);
      if (rtd === 2) out.answeredAt.push([Number(cols[0]), ms]);
    }
  }
  return out;
}

/**
 * Per second of a step (STEP_TIMELINE=1): calls answered, and their INVITE->200 p50/p99; shows whether the slow
 * calls are the step's first seconds (a cold process, an overload controller not yet limiting) or spread over it.
 */
function printTimeline(
  rate: number,
  answeredAt: [number, number][],
  q: (xs: number[], p: number) => string,
  busyBySecond: number[],
): void {
  const bySecond = new Map<number, number[]>();
  for (const [at, ms] of answeredAt) {
    const s = Math.floor(at / 1000);
    bySecond.set(s, [...(bySecond.get(s) ?? []), ms]);
  }
  const cells = [...bySecond]
    .sort((a, b) => a[0] - b[0])
    .map(([s, xs]) => `${s}s: ${xs.length} ${q(xs, 50)}/${q(xs, 99)} ${pct(busyBySecond[s])}`);
  console.log(`timeline ${rate}/s (answered, INVITE->200 p50/p99 ms, loop busy, by second): ${cells.join(' | ')}`);
}

function pidOf(pattern: string): number | undefined {
  try {
    return Number(execFileSync('pgrep', ['-f', pattern]).toString().trim().split('\n')[0]);
  } catch {
    return undefined;
  }
}

function rtpengineTicks(): number {
  return rtpenginePid ? cpuTicks(rtpenginePid) : 0;
}

/** A process's user and system CPU so far, in clock ticks of 10 ms (/proc/PID/stat: every thread of it). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** The switch's CPU so far, ms: this process's, or its own process's. */
function switchCpuMs(): number {
  const pid = ctx.child?.proc.pid;
  if (pid !== undefined) return cpuTicks(pid) * 10;
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1000;
}

/**
 * The store of a switch run in its own process, opened here first: migrated, with the test harness's rates, so that
 * the account, number and trunk are there when it starts.
 */
async function childStore(): Promise<{ db: Db; dataDir: string }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'carrier-switch-'));
  const db = openDb({ databaseUrl: env.SIMU_DATABASE_URL ?? '', dataDir });
  await migrate(db);
  await setRate(db, 'outbound', 100);
  await setRate(db, 'inbound', 50);
  await setRate(db, 'tts', 1);
  return { db, dataDir };
}

/**
 * What the store holds once the last call ended (waited for up to 45 s: a BYE to a callee that has gone away ends
 * its call after the 32 s transaction timeout): no call left live, no credit reservation left, every completed
 * call of SIPp's a completed row, and the wallet moved by exactly the ledger's rows (each call's cost posted once).
 */
async function storeCheck(): Promise<[string, string][]> {
  const live = () => ctx.db('calls').whereIn('status', ['initiated', 'ringing', 'answered']).count({ n: '*' }).first();
  for (let i = 0; i < 450 && Number((await live())?.n ?? 0) > 0; i++) await new Promise((r) => setTimeout(r, 100));
  const n = async (q: Promise<any>) => Number((await q)?.n ?? 0);
  const liveLeft = Number((await live())?.n ?? 0);
  const credit = await n(ctx.db('call_credit').count({ n: '*' }).first());
  const inboundDone = await n(
    ctx.db('calls').where({ account_id: acct.id, direction: 'inbound', status: 'completed' }).count({ n: '*' }).first(),
  );
  const balance = Number((await ctx.db('accounts').where({ id: acct.id }).first('balance_cents'))!.balance_cents);
  const moves = await ctx
    .db('wallet_transactions')
    .where({ account_id: acct.id })
    .select(ctx.db.raw("sum(case when direction = 'credit' then amount_cents else -amount_cents end) as net"))
    .first();
  const costs = await n(ctx.db('calls').where({ account_id: acct.id }).sum({ n: 'cost_cents' }).first());
  const debits = await n(
    ctx.db('wallet_transactions').where({ account_id: acct.id, direction: 'debit' }).sum({ n: 'amount_cents' }).first(),
  );
  const ok = (b: boolean) => (b ? 'ok' : 'MISMATCH');
  return [
    ['calls still live', `${liveLeft} ${ok(liveLeft === 0)}`],
    ['credit reservations left (call_credit)', `${credit} ${ok(credit === 0)}`],
    [
      'inbound calls completed: store / SIPp',
      `${inboundDone} / ${completedTotal} ${ok(inboundDone === completedTotal)}`,
    ],
    [
      'balance = ledger net (cents)',
      `${balance} / ${Number(moves?.net ?? 0)} ${ok(balance === Number(moves?.net ?? 0))}`,
    ],
    ['calls cost = ledger debits (cents)', `${costs} / ${debits} ${ok(costs === debits)}`],
  ];
}

/** Columns only a switch in this process shows; '-' for one in a process of its own. */
function inProcess(columns: string): string {
  return CHILD ? columns.replace(/[^|]+/g, ' - ') : columns;
}

function pct(share: number | undefined): string {
  return share === undefined ? '-' : `${(100 * share).toFixed(0)} %`;
}
