import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopPostgres } from './postgres.js';

/**
 * Every scratch directory of this run (stores, recordings, certificates, SIPp files, PostgreSQL's data) goes
 * under one root, removed at the end: tests create them with os.tmpdir(), which follows TMPDIR, and so do the
 * processes they start. Readable by others, for the postgres user and rtpengine.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'simu-test-'));
chmodSync(root, 0o755);
process.env.TMPDIR = root;

/** Mocha root hooks: shared servers started lazily by tests are stopped once at the end. */
export const mochaHooks = {
  async afterAll() {
    await stopPostgres();
    if (!process.env.SIMU_KEEP_TEST_FILES) rmSync(root, { recursive: true, force: true });
  },
};
