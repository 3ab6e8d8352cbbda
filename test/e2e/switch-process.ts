import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface SwitchProcess {
  proc: ChildProcess;
  output: () => string;
  baseUrl: string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the real switch as a child process with its own data directory and ports, and resolves once it printed
 * its banner: the TypeScript through tsx's loader, or with `compiled` what `npm start` runs, node on dist/main.js
 * (built by `npm run build` beforehand).
 */
export async function startSwitch(
  env: Record<string, string>,
  timeoutMs = 30000,
  opts: { compiled?: boolean } = {},
): Promise<SwitchProcess> {
  // One process (node, with tsx's loader for TypeScript), not a wrapper: a SIGKILL must hit the switch itself.
  const args = opts.compiled ? ['dist/main.js'] : ['--import', 'tsx', 'main.ts'];
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    // Overload control is off unless a test asks for it (a busy test box must not shed a test's few calls).
    env: {
      ...process.env,
      SIMU_OVERLOAD_LOOP_DELAY_MS: '10000',
      SIMU_OVERLOAD_STORE_WAIT_MS: '10000',
      // Webhook servers of the tests listen on 127.0.0.1 (docs/security.md, "Outbound URLs").
      SIMU_WEBHOOK_ALLOW_PRIVATE: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const stop = (signal: NodeJS.Signals = 'SIGTERM') =>
    new Promise<number | null>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
      proc.once('exit', (code) => resolve(code));
      proc.kill(signal);
      setTimeout(() => proc.kill('SIGKILL'), 8000).unref();
    });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`switch did not start in time:\n${out}`)), timeoutMs);
    const check = () => {
      if (out.includes('Simu is running')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout!.on('data', check);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`switch exited with ${code}:\n${out}`));
    });
  });
  return { proc, output: () => out, baseUrl: `http://127.0.0.1:${env.SIMU_HTTP_PORT}`, stop };
}

/** Pids of processes whose command line contains `pattern`. */
export function pidsMatching(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern]).toString().trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
