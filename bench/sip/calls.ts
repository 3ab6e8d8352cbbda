/**
 * Call benchmark: SIPp's built-in uac (pinned to core 1) calls a minimal answering app built on sip/stack
 * (pinned to core 0) at a fixed rate, then the same SIPp run against SIPp's own uas (the harness ceiling).
 * Prints a table with calls/s, failures, retransmissions, INVITE-to-200 p50/p99 and the parser rate, beside
 * a Kamailio stateful-proxy figure measured by hand on a box of this kind (re-run it on yours). Usage:
 *   npx tsx bench/sip/calls.ts [--rate 1000] [--duration 60] [--skip-harness]
 * Ports 17000-17999. Every process is stopped by its PID.
 */
import '../scratch.js'; // first: this run's scratch directories under one root, removed at exit
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parserRate } from './parser-bench.js';
import { traceStat } from '../../test/support/sipp.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const RATE = Number(arg('rate', '1000'));
const DURATION = Number(arg('duration', '60'));
const KAMAILIO_ANCHOR_CPS = 1500;
const APP_PORT = 17060;
const SIPP_UAS_PORT = 17070;
const UAC_PORT = 17061;

interface RunResult {
  label: string;
  attempted: number;
  ok: number;
  failed: number;
  retrans: number;
  cps: number;
  p50: number;
  p99: number;
}

function start(cmd: string, args: string[], cwd: string): ChildProcess {
  return spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || !child.pid) return resolve();
    const t = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    process.kill(child.pid, 'SIGTERM');
  });
}

async function waitReady(child: ChildProcess, ms = 15000): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('app did not start')), ms);
    child.stdout!.on('data', (d) => {
      if (String(d).includes('ready')) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', () => reject(new Error('app exited')));
  });
}

async function runUac(label: string, target: string): Promise<RunResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sip-bench-'));
  const calls = RATE * DURATION;
  const started = performance.now();
  const uac = start(
    'taskset',
    [
      '-c',
      '1',
      'sipp',
      target,
      '-sn',
      'uac',
      '-i',
      '127.0.0.1',
      '-p',
      String(UAC_PORT),
      '-r',
      String(RATE),
      '-m',
      String(calls),
      '-timeout',
      `${DURATION + 30}s`,
      '-recv_timeout',
      '5000',
      '-nostdin',
      '-trace_stat',
      '-fd',
      '1',
      '-stf',
      'stat.csv',
      '-trace_rtt',
      '-rtt_freq',
      '200',
    ],
    dir,
  );
  await new Promise((r) => uac.once('exit', r));
  const wall = (performance.now() - started) / 1000;
  const stat = traceStat(dir, 'stat.csv');
  const col = (n: string) => Number(stat.get(n));
  const rttFile = readdirSync(dir).find((f) => f.endsWith('_rtt.csv'));
  const rtts = rttFile
    ? readFileSync(path.join(dir, rttFile), 'utf8')
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(';'))
        .filter((c) => c[2] === '1')
        .map((c) => Number(c[1]))
        .sort((a, b) => a - b)
    : [];
  const pct = (p: number) => (rtts.length ? rtts[Math.min(rtts.length - 1, Math.floor(rtts.length * p))] : NaN);
  const ok = col('SuccessfulCall(C)');
  return {
    label,
    attempted: col('OutgoingCall(C)'),
    ok,
    failed: col('FailedCall(C)'),
    retrans: col('Retransmissions(C)'),
    cps: Math.round(ok / Math.max(1, wall - 0.5)),
    p50: pct(0.5),
    p99: pct(0.99),
  };
}

async function main(): Promise<void> {
  const rows: RunResult[] = [];
  const loadBefore = os.loadavg()[0].toFixed(1);
  const app = start(
    'taskset',
    ['-c', '0', process.execPath, '--import', 'tsx', path.join(here, 'answer-app.ts')],
    repo,
  );
  app.stderr!.on('data', (d) => process.stderr.write(d));
  try {
    await waitReady(app);
    rows.push(await runUac('sip/stack answering app', `127.0.0.1:${APP_PORT}`));
  } finally {
    await stop(app);
  }
  if (!process.argv.includes('--skip-harness')) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sip-bench-uas-'));
    const uas = start(
      'taskset',
      ['-c', '1', 'sipp', '-sn', 'uas', '-i', '127.0.0.1', '-p', String(SIPP_UAS_PORT), '-nostdin'],
      dir,
    );
    try {
      await new Promise((r) => setTimeout(r, 500));
      rows.push(await runUac('SIPp uas (harness ceiling)', `127.0.0.1:${SIPP_UAS_PORT}`));
    } finally {
      await stop(uas);
    }
  }
  const parser = parserRate();
  const line = (cells: (string | number)[]) => '| ' + cells.map(String).join(' | ') + ' |';
  console.log(
    `\nSIPp uac -> UAS, ${RATE} calls/s offered for ${DURATION} s, UDP on 127.0.0.1; UAS core 0, SIPp core 1`,
  );
  // The box is shared: other work on the same cores shows up as retransmissions and tail latency.
  console.log(`1-min load average before/after: ${loadBefore}/${os.loadavg()[0].toFixed(1)} (2 cores)\n`);
  console.log(line(['UAS', 'calls/s', 'attempted', 'ok', 'failed %', 'retrans', 'INVITE->200 p50 ms', 'p99 ms']));
  console.log(line(['---', '---', '---', '---', '---', '---', '---', '---']));
  for (const r of rows) {
    const failPct = r.attempted ? ((100 * r.failed) / r.attempted).toFixed(3) : 'NA';
    console.log(line([r.label, r.cps, r.attempted, r.ok, failPct, r.retrans, r.p50, r.p99]));
  }
  console.log(
    line(['Kamailio 5.6 stateful proxy (anchor, 1 child)', KAMAILIO_ANCHOR_CPS, 30000, 30000, '0.000', 0, 0, 36]),
  );
  console.log(`\n| parser | messages/s |\n| --- | --- |\n| parseMessage(INVITE with SDP) | ${parser} |`);
  const ours = rows[0];
  const clean = ours.attempted > 0 && ours.failed / ours.attempted < 0.001;
  console.log(
    `\nsip/stack: ${ours.cps} calls/s ${clean ? 'clean (<0.1% failed)' : 'NOT clean'}; goal 500 calls/s; ` +
      `${(ours.cps / KAMAILIO_ANCHOR_CPS).toFixed(2)} x the Kamailio anchor`,
  );
}

await main();
