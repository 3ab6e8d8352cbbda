import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * How the operator's tool reaches the switch of a data directory on this box: the switch writes its pid to
 * PID_FILE once started and removes it when it stops; `simu node drain` writes the drain time it wants to
 * DRAIN_FILE and sends the switch SIGTERM, which reads (and removes) that file.
 */
export const PID_FILE = 'simu.pid';
export const DRAIN_FILE = 'simu.drain';

/** The pid of the switch running on `dataDir`, or undefined when none is (a pid file left by a crash is stale). */
export function runningSwitchPid(dataDir: string): number | undefined {
  const file = path.join(dataDir, PID_FILE);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: alive, owned by another user (the service's); ESRCH: gone.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return pid;
}

/** Removes the pid file if it still names this process. */
export function removeOwnPidFile(file: string): void {
  try {
    if (Number(readFileSync(file, 'utf8').trim()) === process.pid) rmSync(file, { force: true });
  } catch {
    /* already gone */
  }
}

export function requestDrainSeconds(dataDir: string, seconds: number): void {
  writeFileSync(path.join(dataDir, DRAIN_FILE), `${seconds}\n`);
}

/** The drain time `simu node drain` asked for, once (the file is removed), or undefined. */
export function requestedDrainSeconds(dataDir: string): number | undefined {
  const file = path.join(dataDir, DRAIN_FILE);
  if (!existsSync(file)) return undefined;
  const seconds = Number(readFileSync(file, 'utf8').trim());
  rmSync(file, { force: true });
  return Number.isInteger(seconds) && seconds >= 0 && seconds <= 86400 ? seconds : undefined;
}
