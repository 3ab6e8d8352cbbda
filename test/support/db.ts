import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { openDb, migrate, type Db } from '../../store/index.js';
import { startPostgres } from './postgres.js';

export interface TestDbKind {
  name: 'sqlite' | 'postgres';
  /** A new, migrated, empty database. */
  open(): Promise<Db>;
}

let seq = 0;

export const sqliteDb: TestDbKind = {
  name: 'sqlite',
  async open() {
    const db = openDb({ databaseUrl: '', dataDir: mkdtempSync(path.join(os.tmpdir(), 'simu-db-')) });
    await migrate(db);
    return db;
  },
};

/** A new, empty PostgreSQL database on the test server: its URL (not migrated). */
export async function newPostgresDatabase(): Promise<string> {
  const admin = await startPostgres();
  const name = `simu_t${process.pid}_${++seq}`;
  const a = knexFactory({ client: 'pg', connection: admin });
  await a.raw(`create database ${name}`);
  await a.destroy();
  return admin.replace(/\/postgres$/, `/${name}`);
}

export const postgresDb: TestDbKind = {
  name: 'postgres',
  async open() {
    const db = openDb({ databaseUrl: await newPostgresDatabase(), dataDir: os.tmpdir() });
    await migrate(db);
    return db;
  },
};

/** Both stores: tests of the store and of money run against each. */
export const BOTH_DBS: TestDbKind[] = [sqliteDb, postgresDb];
