/**
 * SIPp as a real peer in the tests: the one runner the e2e harness (test/e2e/support/harness.ts) and the SIP stack's
 * interop tests (test/sip/stack/sipp.ts) both use.
 *
 * Every run is bounded in time twice over: SIPp's own `-timeout` (60 s unless the arguments name one) and a
 * SIGKILL after `limitMs`. Its media (`-mp`) and control (`-cp`) ports come from this run's block
 * (test/support/ports.ts) unless the arguments name them, instead of SIPp's defaults (6000, 8888), which two
 * suites on one box would share. Arguments are an argv array, never a shell line. A SIPp still running when the
 * test process exits is killed then; a suite kills its own earlier with `SippPeers.killAll()` or `run.kill()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { nextPort, nextPorts } from './ports.js';

/** What a finished SIPp left: its exit code (null when killed), and what it wrote. */
export interface SippResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SippRun {
  readonly proc: ChildProcess;
  readonly pid: number | undefined;
  /** Its exit code: 0 when every call of the scenario succeeded; null when it was killed; -1 when it never ran. */
  readonly exited: Promise<number | null>;
  /** The exit code with stdout and stderr apart. */
  readonly done: Promise<SippResult>;
  /** stdout and stderr as they came, interleaved (for an assertion's message). */
  output(): string;
  /** SIGKILL; safe when it has already exited. */
  kill(): void;
}

export interface SippOptions {
  /** Killed after this long (default 65 s: past the default -timeout of 60 s). */
  limitMs?: number;
  /** Its working directory: where -trace_* files go (default: the test's own). */
  cwd?: string;
}

const running = new Set<ChildProcess>();
let exitHookSet = false;

/** Starts one SIPp with `args` (see the module comment for what is added), bounded in time. */
export function runSipp(args: readonly string[], opts: SippOptions = {}): SippRun {
  const extra: string[] = [];
  // SIPp's own RTP sockets (audio and video, RTP and RTCP: base..base+3) and its control socket from the block.
  if (!args.includes('-mp')) extra.push('-mp', String(nextPorts(4)));
  if (!args.includes('-cp')) extra.push('-cp', String(nextPort()));
  if (!args.includes('-timeout')) extra.push('-timeout', '60s');
  if (!args.includes('-nostdin')) extra.push('-nostdin');
  const proc = spawn('sipp', [...args, ...extra], { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  track(proc);
  let stdout = '';
  let stderr = '';
  let both = '';
  proc.stdout!.on('data', (d) => ((stdout += d), (both += d)));
  proc.stderr!.on('data', (d) => ((stderr += d), (both += d)));
  const timer = setTimeout(() => proc.kill('SIGKILL'), opts.limitMs ?? 65_000);
  const done = new Promise<SippResult>((resolve) => {
    const finish = (code: number | null) => {
      clearTimeout(timer);
      running.delete(proc);
      resolve({ code, stdout, stderr });
    };
    proc.once('exit', (code) => finish(code));
    proc.once('error', (err) => {
      stderr += `sipp did not start: ${err.message}\n`;
      both += `sipp did not start: ${err.message}\n`;
      finish(-1);
    });
  });
  return {
    proc,
    pid: proc.pid,
    exited: done.then((r) => r.code),
    done,
    output: () => both,
    kill: () => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')),
  };
}

/** The SIPp peers of one suite: `killAll()` in its `after` hook ends every one still running. */
export class SippPeers {
  readonly #runs = new Set<SippRun>();

  /** Starts SIPp; `done` resolves when it exits or is killed after `limitMs` (default 25 s). */
  run(args: readonly string[], limitMs = 25_000, opts: Omit<SippOptions, 'limitMs'> = {}): SippRun {
    const r = runSipp(args, { ...opts, limitMs });
    this.#runs.add(r);
    void r.done.then(() => this.#runs.delete(r));
    return r;
  }

  killAll(): void {
    for (const r of this.#runs) r.kill();
    this.#runs.clear();
  }
}

function track(proc: ChildProcess): void {
  running.add(proc);
  if (exitHookSet) return;
  exitHookSet = true;
  process.once('exit', () => {
    for (const p of running) p.kill('SIGKILL');
  });
}

/**
 * SIPp's -trace_counts file (`<scenario>_<pid>_counts.csv` in its working directory `dir`): the last row's counts
 * by message and direction ("503_Recv", "BYE_Sent"), the first scenario line of each (the INVITE's 200 comes
 * before the 200 to the BYE). Empty when SIPp wrote none.
 */
export function traceCounts(dir: string, scenario: string): Map<string, number> {
  const name = path.basename(scenario, '.xml');
  const file = readdirSync(dir).find((f) => f.startsWith(`${name}_`) && f.endsWith('_counts.csv'));
  const out = new Map<string, number>();
  if (!file) return out;
  const lines = readFileSync(path.join(dir, file), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines.at(-1)!.split(';');
  head.forEach((h, i) => {
    const m = /^\d+_(\w+_(?:Recv|Sent))$/.exec(h);
    if (m && !out.has(m[1]!)) out.set(m[1]!, Number(last[i] ?? 0));
  });
  return out;
}

/** SIPp's -trace_stat file (`-stf` or `<scenario>_<pid>_.csv` in `dir`): its last row, by column name. */
export function traceStat(dir: string, file?: string): Map<string, string> {
  const name = file ?? readdirSync(dir).find((f) => f.endsWith('_.csv'));
  const out = new Map<string, string>();
  if (!name) return out;
  const lines = readFileSync(path.join(dir, name), 'utf8').trim().split('\n');
  const head = lines[0]!.split(';');
  const last = lines.at(-1)!.split(';');
  head.forEach((h, i) => out.set(h, last[i] ?? ''));
  return out;
}
