import sqlite3 from 'sqlite3';

/**
 * WAL checkpoints off the event loop. The writer (better-sqlite3, synchronous) would otherwise run SQLite's automatic
 * checkpoint inside whichever COMMIT pushes the WAL past 1,000 pages: copying the pages back into the database file
 * and an fsync, measured at 1-24 ms of stalled event loop under the carrier bench (75 of 4,400 commits, over half of
 * all commit time). Instead the writer turns automatic checkpoints off and this connection, on node-sqlite3 and so on
 * libuv's thread pool, runs a PASSIVE checkpoint every interval: it copies what no reader still needs and never
 * blocks the writer, which appends to the WAL meanwhile. The WAL restarts from its beginning once a checkpoint has
 * caught up, so its size stays bounded by what is written between two checkpoints.
 */
export interface Checkpointer {
  /** Checkpoints run and frames they copied, for benches and tests. */
  readonly stats: { runs: number; frames: number; failures: number };
  /** Stops the timer, waits for a running checkpoint and closes the connection. */
  stop(): Promise<void>;
}

export function startCheckpointer(filename: string, intervalMs: number, onError: (err: unknown) => void): Checkpointer {
  const conn = new sqlite3.Database(filename, sqlite3.OPEN_READWRITE);
  conn.configure('busyTimeout', 1000);
  const stats = { runs: 0, frames: 0, failures: 0 };
  let running: Promise<void> | null = null;
  const tick = (): void => {
    if (running) return;
    running = new Promise<void>((resolve) => {
      conn.get('PRAGMA wal_checkpoint(PASSIVE)', (err: Error | null, row?: { checkpointed?: number }) => {
        if (err) {
          stats.failures++;
          onError(err);
        } else {
          stats.runs++;
          stats.frames += Math.max(0, row?.checkpointed ?? 0);
        }
        running = null;
        resolve();
      });
    });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    stats,
    async stop() {
      clearInterval(timer);
      await running;
      await new Promise<void>((resolve) => conn.close(() => resolve()));
    },
  };
}
