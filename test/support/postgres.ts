import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, chownSync, rmSync, readdirSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextPort } from './ports.js';

/**
 * A real, throwaway PostgreSQL server for tests that are about PostgreSQL: initdb into a temporary folder,
 * listen on 127.0.0.1 at a port of this run's block, stopped when the test run ends. PostgreSQL refuses to run as root, so
 * when we are root the server runs as the `postgres` user the Debian package created.
 */
let server: { url: string; proc: ChildProcess; dir: string } | undefined;
let starting: Promise<string> | undefined;

function pgBin(name: string): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).sort() : [];
  if (!versions.length)
    throw new Error('PostgreSQL server binaries not found: the test set-up installs the postgresql package');
  return path.join(base, versions[versions.length - 1], 'bin', name);
}

function asPostgres(cmd: string, args: string[]): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', cmd, ...args] : [cmd, ...args];
}

async function waitReady(port: number, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    try {
      execFileSync(pgBin('pg_isready'), ['-h', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error('PostgreSQL did not become ready in time');
}

/** Starts the server once per test process; resolves to an admin URL (database `postgres`). */
export function startPostgres(): Promise<string> {
  starting ??= (async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-pg-'));
    if (process.getuid?.() === 0) {
      const pw = execFileSync('id', ['-u', 'postgres']).toString().trim();
      const gid = execFileSync('id', ['-g', 'postgres']).toString().trim();
      chownSync(dir, Number(pw), Number(gid));
    }
    const [initCmd, ...initArgs] = asPostgres(pgBin('initdb'), ['-D', dir, '-U', 'simu', '--auth=trust', '-E', 'UTF8']);
    execFileSync(initCmd, initArgs, { stdio: 'ignore' });
    // From this run's block (test/support/ports.ts), not a port the kernel chose for listen(0) and closed again: the
    // kernel may hand that one to any outgoing connection of the box before the server has bound it.
    const port = nextPort();
    const [cmd, ...args] = asPostgres(pgBin('postgres'), [
      '-D',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'max_connections=200',
    ]);
    const proc = spawn(cmd, args, { stdio: 'ignore' });
    await waitReady(port, Date.now() + 20000);
    const url = `postgres://simu@127.0.0.1:${port}/postgres`;
    server = { url, proc, dir };
    process.once('exit', stopPostgresSync);
    return url;
  })();
  return starting;
}

function stopPostgresSync(): void {
  if (!server) return;
  server.proc.kill('SIGINT'); // fast shutdown
  try {
    rmSync(server.dir, { recursive: true, force: true });
  } catch {
    /* best effort */
  }
  server = undefined;
}

export async function stopPostgres(): Promise<void> {
  if (!server) return;
  const { proc, dir } = server;
  server = undefined;
  starting = undefined;
  // As root the child is `runuser`, which can exit before the postmaster has finished: pg_ctl waits for the
  // server itself to be gone (fast shutdown), so the data directory is no longer written when it is removed.
  try {
    const [cmd, ...args] = asPostgres(pgBin('pg_ctl'), ['stop', '-D', dir, '-m', 'fast', '-w', '-t', '20']);
    execFileSync(cmd, args, { stdio: 'ignore' });
  } catch {
    proc.kill('SIGKILL');
  }
  if (proc.exitCode === null && proc.signalCode === null) {
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      setTimeout(resolve, 5000).unref();
    });
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
