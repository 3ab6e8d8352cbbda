import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runCli } from '../../cli/index.js';
import { migrate, openDb, type Db } from '../../store/index.js';

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return { stream, text: () => text };
}

/** Runs the operator CLI in this process (config from process.env) and captures what it prints. */
export async function simu(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = capture();
  const err = capture();
  const code = await runCli(argv, { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
}

/**
 * For a describe block: a fresh data folder for the CLI (SIMU_DATA_DIR, put back after the block) and this process's
 * store in it, handed to `opened` (migrated first when `migrated`); the store is closed after the block.
 */
export function cliDataDir(prefix: string, opened: (db: Db) => void, o: { migrated?: boolean } = {}): void {
  const saved = process.env.SIMU_DATA_DIR;
  let db: Db | undefined;
  before(async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), prefix));
    process.env.SIMU_DATA_DIR = dataDir;
    db = openDb({ databaseUrl: '', dataDir });
    if (o.migrated) await migrate(db);
    opened(db);
  });
  after(async () => {
    await db?.destroy();
    if (saved === undefined) delete process.env.SIMU_DATA_DIR;
    else process.env.SIMU_DATA_DIR = saved;
  });
}
