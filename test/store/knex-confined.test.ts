import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate, openDb } from '../../store/index.js';

/**
 * The store speaks SQL one way, through its driver (store/driver/). knex is used only where it still helps: the
 * migrations and their helpers (the live-call and change triggers), the module that opens knex for them
 * (store/knex.ts) and the store object that holds it (store/db.ts), the migration status, and the calls list
 * whose filters are built at run time (built by knex, run by the driver). Nothing in store/ reaches into a
 * library's private modules (`knex/lib/…`, `pg/lib/…`) or knex's client.
 */
const STORE = path.resolve(import.meta.dirname, '..', '..', 'store');
const KNEX_ALLOWED = ['knex.ts', 'db.ts', 'migration-status.ts', 'change-notify.ts', 'live-calls.ts', 'migrations/'];
/** Modules that build a query with knex (never run by knex: compiled, then run by the driver). */
const BUILDS_WITH_KNEX = ['calls.ts'];

function* files(dir: string, rel = ''): Generator<string> {
  for (const name of readdirSync(dir)) {
    const r = rel ? `${rel}/${name}` : name;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full, r);
    else if (name.endsWith('.ts')) yield r;
  }
}

const allowed = (f: string, list: readonly string[]): boolean =>
  list.some((a) => f === a || (a.endsWith('/') && f.startsWith(a)));

const IMPORTS_KNEX = /\bfrom\s+['"]knex['"]|\brequire\(\s*['"]knex['"]\s*\)|\bimport\(\s*['"]knex['"]\s*\)/;
const IMPORTS_KNEX_MODULE = /\bfrom\s+['"]\.\/knex\.js['"]/;
/** The store object used as knex: a builder (`db('calls')`), raw SQL, knex's transactions, schema or client. */
const USES_KNEX =
  /\b(?:db|readDb|trx|knex)\(\s*['"`]|\b(?:db|readDb|trx|knex)\.(?:raw|transaction|schema|client|migrate|fn)\b/;
const DEEP = /['"](?:knex|pg|better-sqlite3|tarn)\/(?:lib|src|dist)\//;

const source = (f: string): string => readFileSync(path.join(STORE, f), 'utf8');

describe('store: knex only for migrations and dynamic queries', () => {
  it('no other store module imports knex', () => {
    const offenders = [...files(STORE)].filter(
      (f) =>
        (IMPORTS_KNEX.test(source(f)) && !allowed(f, KNEX_ALLOWED)) ||
        (IMPORTS_KNEX_MODULE.test(source(f)) && !allowed(f, [...KNEX_ALLOWED, ...BUILDS_WITH_KNEX])),
    );
    assert.deepEqual(offenders, []);
  });

  it('no other store module runs SQL through knex', () => {
    const offenders = [...files(STORE)].filter(
      (f) => USES_KNEX.test(source(f)) && !allowed(f, [...KNEX_ALLOWED, ...BUILDS_WITH_KNEX]),
    );
    assert.deepEqual(offenders, []);
  });

  it('no store module imports a library’s private module', () => {
    const offenders = [...files(STORE)].filter((f) => DEEP.test(source(f)));
    assert.deepEqual(offenders, []);
  });

  it("on SQLite knex's connection closes once idle: the running store's one writing connection is its driver's", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-knex-idle-'));
    const db = openDb({ databaseUrl: '', dataDir: dir, groupCommit: true });
    try {
      await migrate(db);
      const pool = (db.client as unknown as { pool: { numUsed(): number; numFree(): number } }).pool;
      assert.equal(pool.numUsed() + pool.numFree(), 1, 'knex ran the migrations on a connection of its own');
      const deadline = Date.now() + 10_000;
      while (pool.numUsed() + pool.numFree() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.equal(pool.numUsed() + pool.numFree(), 0, "knex's connection is still open");
    } finally {
      await db.destroy();
    }
  });

  it('the checks see knex imported and used', () => {
    assert.ok(IMPORTS_KNEX.test("import knexFactory from 'knex';"));
    assert.ok(DEEP.test("requireHere('knex/lib/dialects/better-sqlite3/index.js')"));
    assert.ok(USES_KNEX.test("await db('ip_bans').where({ address }).delete();"));
    assert.ok(USES_KNEX.test('return db.transaction(async (trx) => {'));
    assert.ok(USES_KNEX.test('const knexClient = db.client as { driver: unknown };'));
    assert.ok(!USES_KNEX.test("await selectRows(db, 'select 1', []);"));
  });
});
