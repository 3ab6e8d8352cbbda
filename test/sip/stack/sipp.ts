/** Runs SIPp as a real peer for interop tests; every process is tracked and killed by PID. */
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const SCENARIOS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'scenarios');

export interface SippResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export class SippRunner {
  readonly #running = new Set<ChildProcess>();

  /** Starts SIPp and resolves when it exits (or is killed after `limitMs`). */
  run(args: string[], limitMs = 25000): { done: Promise<SippResult>; pid: number | undefined } {
    const child = spawn('sipp', [...args, '-nostdin'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += String(d)));
    child.stderr!.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    const done = new Promise<SippResult>((resolve) =>
      child.on('exit', (code) => {
        clearTimeout(timer);
        this.#running.delete(child);
        resolve({ code, stdout, stderr });
      }),
    );
    return { done, pid: child.pid };
  }

  killAll(): void {
    for (const c of this.#running) if (c.pid) process.kill(c.pid, 'SIGKILL');
    this.#running.clear();
  }
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => {
      const sock = dgram.createSocket('udp4');
      sock.once('error', () => srv.close(() => resolve(false)));
      sock.bind(port, '127.0.0.1', () => sock.close(() => srv.close(() => resolve(true))));
    });
  });
}

/**
 * A port of our range free for both UDP and TCP right now, chosen at random so that two runs of this suite at
 * once (several engineers run `npm test` on one box) do not fight over fixed numbers.
 */
export async function pickPort(lo: number, hi: number): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port in ${lo}-${hi}`);
}

/** A free signalling port for a SIPp peer (16000-16499 of this room's peer range). */
export const peerPort = (): Promise<number> => pickPort(16000, 16499);

/**
 * A free media base for SIPp (16500-16999): SIPp binds audio and video RTP and RTCP at base..base+3, so the
 * base is a multiple of 4 with all four ports free.
 */
export async function mediaPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const base = 16500 + 4 * Math.floor(Math.random() * 125);
    const free = await Promise.all([0, 1, 2, 3].map((k) => canBind(base + k)));
    if (free.every(Boolean)) return base;
  }
  throw new Error('no free media ports');
}

export { waitForBound } from '../../support/wait.js';

/** Common client arguments: target, local signalling and media ports, bounded run. */
export async function clientArgs(target: string, transport: 'UDP' | 'TCP', calls = 1): Promise<string[]> {
  return [
    target,
    '-i',
    '127.0.0.1',
    '-p',
    String(await peerPort()),
    '-mp',
    String(await mediaPort()),
    '-m',
    String(calls),
    '-timeout',
    '20s',
    '-recv_timeout',
    '8000',
    ...(transport === 'TCP' ? ['-t', 't1'] : []),
  ];
}
