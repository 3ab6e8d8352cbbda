/**
 * Online backup and restore of the SQLite store (`simu backup FILE`, `simu restore FILE`).
 *
 * A backup is SQLite's online backup of the store file, taken while the switch runs: one read transaction copies
 * every page, so the copy is the store as it was at one instant (the switch's writes go on meanwhile, in the WAL),
 * never a half-written call or ledger entry. A restore replaces the store with such a copy and is refused while any
 * process holds the store open: a running switch would go on writing to the file it already has.
 * PostgreSQL stores are backed up with pg_dump and restored with pg_restore (README, "Backups").
 */
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { StoreError } from './errors.js';

/** The slice of better-sqlite3 (which ships no types) that backup and restore use. */
interface SqliteFile {
  pragma(source: string, options?: { simple: boolean }): unknown;
  prepare(sql: string): { get(): unknown };
  backup(file: string, options: { progress: () => number }): Promise<{ totalPages: number }>;
  close(): void;
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  file: string,
  options?: { readonly?: boolean; fileMustExist?: boolean },
) => SqliteFile;

/** The store file of a data directory, as store/db.ts opens it. */
export function sqliteStoreFile(dataDir: string): string {
  return path.join(dataDir, 'simu.db');
}

export interface BackupResult {
  file: string;
  pages: number;
  bytes: number;
  ms: number;
}

/** Copies the store of `dataDir` to `file` (which must not exist) while the switch may be writing to it. */
export async function backupSqliteStore(dataDir: string, file: string): Promise<BackupResult> {
  const source = sqliteStoreFile(dataDir);
  if (!existsSync(source)) throw new StoreError('STORE_NOT_FOUND', `no store at ${source}`);
  if (existsSync(file)) throw new StoreError('BACKUP_EXISTS', `${file} exists already; name a new file`);
  const t0 = performance.now();
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // Every remaining page in the one step after SQLite's first: a step holds one read transaction, so the copy
    // is one instant of the store, and a write by the switch between steps cannot make SQLite start over forever.
    const done = await db.backup(file, { progress: () => 0x7fffffff });
    return { file, pages: done.totalPages, bytes: statSync(file).size, ms: performance.now() - t0 };
  } catch (e) {
    rmSync(file, { force: true });
    throw e;
  } finally {
    db.close();
  }
}

/** Processes of this box that hold `file` (or its WAL) open, by pid. */
export function processesHolding(file: string): number[] {
  const targets = new Set([file, `${file}-wal`, `${file}-shm`].map((f) => path.resolve(f)));
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      if (targets.has(target)) {
        pids.push(Number(entry));
        break;
      }
    }
  }
  return pids;
}

/** The command line of a process, for a refusal that names what holds the store. */
export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '?';
  }
}

export interface RestoreResult {
  file: string;
  /** Where the store it replaced was kept (absent when there was none). */
  previous?: string;
}

/**
 * Puts the backup `file` in place of the store of `dataDir`. The backup is checked first (a SQLite database that
 * passes its integrity check and holds Simu's migrations); the store it replaces is kept beside it.
 */
export function restoreSqliteStore(dataDir: string, file: string, now = new Date()): RestoreResult {
  if (!existsSync(file)) throw new StoreError('BACKUP_NOT_FOUND', `no backup at ${file}`);
  checkBackup(file);
  const store = sqliteStoreFile(dataDir);
  const holders = processesHolding(store);
  if (holders.length > 0) {
    const who = holders.map((pid) => `pid ${pid} (${commandLineOf(pid).slice(0, 80)})`).join(', ');
    throw new StoreError('STORE_IN_USE', `the store ${store} is open in ${who}: stop the switch first`);
  }
  const staged = `${store}.restoring`;
  copyFileSync(file, staged);
  const fd = openSync(staged, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  let previous: string | undefined;
  if (existsSync(store)) {
    previous = `${store}.before-restore-${now.toISOString().replace(/[:.]/g, '-')}`;
    // The WAL holds the newest writes of the store it belongs to: folded in before the store is set aside.
    const old = new Database(store);
    old.pragma('wal_checkpoint(TRUNCATE)');
    old.close();
    renameSync(store, previous);
  }
  rmSync(`${store}-wal`, { force: true });
  rmSync(`${store}-shm`, { force: true });
  renameSync(staged, store);
  return { file: store, ...(previous !== undefined && { previous }) };
}

function checkBackup(file: string): void {
  let db: SqliteFile;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (e) {
    throw new StoreError('BACKUP_INVALID', `${file} is not a SQLite database: ${(e as Error).message}`);
  }
  try {
    const ok = db.pragma('integrity_check', { simple: true });
    if (ok !== 'ok') throw new StoreError('BACKUP_INVALID', `${file} fails SQLite's integrity check: ${String(ok)}`);
    const migrations = db
      .prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'knex_migrations'")
      .get() as { n: number };
    if (migrations.n === 0) throw new StoreError('BACKUP_INVALID', `${file} is not a Simu store (no migrations)`);
  } catch (e) {
    if (e instanceof StoreError) throw e;
    throw new StoreError('BACKUP_INVALID', `${file} cannot be read as a store: ${(e as Error).message}`);
  } finally {
    db.close();
  }
}
