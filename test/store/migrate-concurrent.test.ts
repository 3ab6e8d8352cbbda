import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { migrate, openDb, pendingMigrations, type Db } from '../../store/index.js';
import { newPostgresDatabase } from '../support/db.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Runs the migrations in a process of its own; resolves with its exit code and what it printed on stderr. */
function migrateInProcess(url: string): Promise<{ code: number | null; stderr: string }> {
  const script =
    "const { openDb, migrate } = await import('./store/index.ts');" +
    `const db = openDb({ databaseUrl: process.env.SIMU_TEST_URL, dataDir: ${JSON.stringify(os.tmpdir())} });` +
    'try { await migrate(db); } finally { await db.destroy(); }';
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, SIMU_TEST_URL: url },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('close', (code) => resolve({ code, stderr }));
  });
}

/**
 * Several nodes may start at once on one PostgreSQL: each runs the migrations under one advisory lock, so one
 * migrates a fresh database while the others wait, then find nothing left to do.
 */
describe('store: migrations started at once on one postgres', function () {
  this.timeout(120000);

  it('two stores of one process migrating a fresh database at once both succeed', async () => {
    const url = await newPostgresDatabase();
    const a: Db = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
    const b: Db = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
    try {
      const results = await Promise.allSettled([migrate(a), migrate(b)]);
      assert.deepEqual(
        results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok')),
        ['ok', 'ok'],
      );
      assert.deepEqual(await pendingMigrations(a), []);
    } finally {
      await a.destroy();
      await b.destroy();
    }
  });

  it('three processes migrating a fresh database at once all succeed', async () => {
    const url = await newPostgresDatabase();
    const runs = await Promise.all([migrateInProcess(url), migrateInProcess(url), migrateInProcess(url)]);
    assert.deepEqual(
      runs.map((r) => (r.code === 0 ? 'ok' : `exit ${r.code}: ${r.stderr.slice(-400)}`)),
      ['ok', 'ok', 'ok'],
    );
    const db = openDb({ databaseUrl: url, dataDir: os.tmpdir() });
    try {
      assert.deepEqual(await pendingMigrations(db), []);
    } finally {
      await db.destroy();
    }
  });
});
