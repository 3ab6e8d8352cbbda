import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints off the event loop. The writer (better-sqlite3, synchronous) runs SQLite's automatic checkpoint
 * inside whichever COMMIT pushes the WAL past its threshold: copying the pages back into the database file and an
 * fsync, which stalls the event loop. A worker thread runs a PASSIVE checkpoint every interval on a connection of
 * its own: it copies what no reader still needs and never blocks the writer, which appends to the WAL meanwhile.
 * It cannot restart the WAL under continuous writes, though (a restart needs every frame copied when a write
 * transaction begins, and new frames keep arriving), so the WAL would grow without bound: the writer keeps its own
 * checkpoint at 4,000 pages (store/driver/sqlite.ts), where it finds the worker has copied nearly everything and
 * the WAL stays about 16 MB (docs/performance.md).
 *
 * The worker uses better-sqlite3 like the writer, in the same process: one SQLite library, whose shared-memory and
 * lock bookkeeping covers both connections. A second SQLite library in the process (node-sqlite3) must not open the
 * file for writing: POSIX locks do not tell two connections of one process apart, so its opening takes the writer's
 * shared memory for abandoned and truncates it (seen here as SIGBUS in the writer).
 */
export interface Checkpointer {
  /** Stops the worker. */
  stop(): Promise<void>;
}

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try {
    checkpoint.get();
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'stop') {
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});
`;

export function startCheckpointer(filename: string, intervalMs: number, onError: (err: unknown) => void): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER, { eval: true, workerData: { filename, intervalMs, driver } });
  worker.unref();
  worker.on('message', (m: { error?: string }) => {
    if (m.error) onError(new Error(m.error));
  });
  worker.on('error', onError);
  return {
    async stop() {
      worker.postMessage('stop');
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => void worker.terminate().then(() => resolve()), 1000);
        worker.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
      });
    },
  };
}
