/**
 * Every scratch directory a bench makes (the switch's store, SIPp's files, recordings) goes under one root that is
 * removed when the bench exits, as the test hooks do for a test run: benches run often, and each run left its store
 * behind (30-60 MB). `BENCH_KEEP=1` keeps it and says where. Imported first, for its effect: os.tmpdir() follows
 * TMPDIR, here and in the processes a bench starts. Readable by others, for rtpengine and the postgres user.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = mkdtempSync(path.join(os.tmpdir(), `simu-bench-${process.pid}-`));
chmodSync(root, 0o755);
process.env.TMPDIR = root;
process.on('exit', () => {
  if (process.env.BENCH_KEEP === '1') process.stderr.write(`bench scratch kept in ${root}\n`);
  else rmSync(root, { recursive: true, force: true });
});
