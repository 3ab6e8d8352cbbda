import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { migrate, openDb, type Db } from '../../../store/index.js';
import { startPostgres } from '../../support/postgres.js';
import type { SwitchPorts } from './harness.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

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
      SIMU_OVERLOAD_INITIAL_CPS: '0',
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

/**
 * The settings of a switch process on loopback at `ports` (HTTP, SIP over UDP and TCP only, its own rtpengine),
 * with its own data directory; `extra` adds or overrides.
 */
export function processEnv(ports: SwitchPorts, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SIMU_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'simu-node-')),
    SIMU_HTTP_HOST: '127.0.0.1',
    SIMU_HTTP_PORT: String(ports.http),
    SIMU_SIP_HOST: '127.0.0.1',
    SIMU_SIP_PORT: String(ports.sip),
    SIMU_SIP_TLS_PORT: '0',
    SIMU_SIP_WS_PORT: '0',
    SIMU_SIP_WSS_PORT: '0',
    SIMU_RTPENGINE_NG_PORT: String(ports.ng),
    SIMU_RTPENGINE_DTMF_PORT: String(ports.dtmf),
    SIMU_RTP_PORT_MIN: String(ports.rtpMin),
    SIMU_RTP_PORT_MAX: String(ports.rtpMax),
    ...extra,
  };
}

/** A new database on this run's throwaway PostgreSQL, migrated once (before any node starts on it). */
export async function freshPostgresStore(name: string): Promise<{ url: string; db: Db }> {
  const admin = await startPostgres();
  const a = knexFactory({ client: 'pg', connection: admin });
  await a.raw(`create database ${name}_${process.pid}`);
  await a.destroy();
  const url = admin.replace(/\/postgres$/, `/${name}_${process.pid}`);
  const db = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
  await migrate(db);
  return { url, db };
}

/** Kills a switch process started by startSwitch, and the rtpengine it supervised on `ngPort`. */
export async function killSwitch(sw: SwitchProcess | undefined, ngPort: number): Promise<void> {
  await sw?.stop('SIGKILL');
  for (const pid of pidsMatching(`rtpengine.*--listen-ng=127.0.0.1:${ngPort}( |$)`)) process.kill(pid, 'SIGKILL');
}
