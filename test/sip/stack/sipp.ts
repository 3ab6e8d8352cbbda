/** Runs SIPp as a real peer for interop tests; every process is tracked and killed by PID. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nextPort, nextPorts } from '../../support/ports.js';

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

/** A signalling port for a SIPp peer (UDP and TCP), from this run's block (test/support/ports.ts). */
export const peerPort = (): number => nextPort();

/** A media base for SIPp (-mp): SIPp binds audio and video RTP and RTCP at base..base+3, all four from the block. */
export const mediaPort = (): number => nextPorts(4);

export { waitForBound } from '../../support/wait.js';

/** Common client arguments: target, local signalling and media ports, bounded run. */
export function clientArgs(target: string, transport: 'UDP' | 'TCP', calls = 1): string[] {
  return [
    target,
    '-i',
    '127.0.0.1',
    '-p',
    String(peerPort()),
    '-mp',
    String(mediaPort()),
    '-m',
    String(calls),
    '-timeout',
    '20s',
    '-recv_timeout',
    '8000',
    ...(transport === 'TCP' ? ['-t', 't1'] : []),
  ];
}
