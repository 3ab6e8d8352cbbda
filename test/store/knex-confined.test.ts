import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The store speaks SQL one way, through its driver (store/driver/). knex is imported only where it still helps:
 * the migrations and their helpers, the module that opens knex for them (store/knex.ts), and the queries whose
 * filters are built at run time. Nothing in store/ reaches into a library's private modules (`knex/lib/…`,
 * `pg/lib/…`).
 */
const STORE = path.resolve(import.meta.dirname, '..', '..', 'store');
const KNEX_ALLOWED = new Set(['knex.ts', 'change-notify.ts', 'live-calls.ts', 'migrations/']);

function* files(dir: string, rel = ''): Generator<string> {
  for (const name of readdirSync(dir)) {
    const r = rel ? `${rel}/${name}` : name;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full, r);
    else if (name.endsWith('.ts')) yield r;
  }
}

const IMPORTS_KNEX = /\bfrom\s+['"]knex['"]|\brequire\(\s*['"]knex['"]\s*\)|\bimport\(\s*['"]knex['"]\s*\)/;
const DEEP = /['"](?:knex|pg|better-sqlite3)\/(?:lib|src)\//;

describe('store: knex only for migrations and dynamic queries', () => {
  it('no other store module imports knex', () => {
    const offenders = [...files(STORE)].filter(
      (f) =>
        IMPORTS_KNEX.test(readFileSync(path.join(STORE, f), 'utf8')) &&
        ![...KNEX_ALLOWED].some((a) => f === a || (a.endsWith('/') && f.startsWith(a))),
    );
    assert.deepEqual(offenders, []);
  });

  it('no store module imports a library’s private module', () => {
    const offenders = [...files(STORE)].filter((f) => DEEP.test(readFileSync(path.join(STORE, f), 'utf8')));
    assert.deepEqual(offenders, []);
  });

  it('the check sees an import of knex', () => {
    assert.ok(IMPORTS_KNEX.test("import knexFactory from 'knex';"));
    assert.ok(DEEP.test("requireHere('knex/lib/dialects/better-sqlite3/index.js')"));
  });
});
