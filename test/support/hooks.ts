import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { stopPostgres } from './postgres.js';

/**
 * Every scratch directory of this run (stores, recordings, certificates, SIPp files, PostgreSQL's data) goes
 * under one root, removed at the end: tests create them with os.tmpdir(), which follows TMPDIR, and so do the
 * processes they start. Readable by others, for the postgres user and rtpengine. The root is named after this
 * process, so a later run can tidy up after one that was killed (see below).
 */
const base = os.tmpdir();
removeRootsOfDeadRuns(base);
const root = mkdtempSync(path.join(base, `simu-test-${process.pid}-`));
chmodSync(root, 0o755);
process.env.TMPDIR = root;

/**
 * Property tests draw their cases from a seed. Under CI it is fixed, so a run is the same run every time and a
 * red build is a real regression, never the luck of the draw; elsewhere it is random (fast-check prints the seed
 * and path of a failure, and FC_SEED replays it), which is how the properties keep exploring.
 */
const fcSeed = process.env.FC_SEED ?? (process.env.CI ? '20261124' : undefined);
if (fcSeed !== undefined) fc.configureGlobal({ seed: Number(fcSeed) });

/** Mocha root hooks: shared servers started lazily by tests are stopped once at the end. */
export const mochaHooks = {
  async afterAll() {
    await stopPostgres();
    if (!process.env.SIMU_KEEP_TEST_FILES) rmSync(root, { recursive: true, force: true });
  },
};

/**
 * A run that was killed (Ctrl-C twice, kill -9) leaves its root and its throwaway PostgreSQL behind: the server
 * is stopped (immediate shutdown: it holds nothing worth keeping) and the root removed.
 */
function removeRootsOfDeadRuns(dir: string): void {
  for (const name of readdirSync(dir)) {
    const m = /^simu-test-(\d+)-/.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    const runRoot = path.join(dir, name);
    let subs: string[];
    try {
      subs = readdirSync(runRoot);
    } catch {
      continue; // not a directory of ours
    }
    for (const sub of subs.filter((n) => n.startsWith('simu-pg-'))) {
      const pidFile = path.join(runRoot, sub, 'postmaster.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : NaN;
      if (Number.isInteger(pid) && pid > 1 && alive(pid)) process.kill(pid, 'SIGQUIT');
    }
    rmSync(runRoot, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
