import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * ARCHITECTURE.md: store/ is the only room that speaks SQL (issue 14, item 2). Every TypeScript file of the
 * project outside store/ is scanned for knex: an import of it, a table call (`db('calls')`, `trx('…')`,
 * `this.#db('…')`), or a query-builder method (`.where(`, `.raw(`, `.transaction(`, …). Code that needs the
 * database calls a named function of a store module (store/<table-group>.ts, exported through store/index.ts); a
 * multi-statement write takes its transaction from store inTransaction(db, fn).
 *
 * Outside the scan: store/ itself, and test/, bench/, scripts/ (fixtures and measurements may set rows up
 * directly), plus what is not ours (node_modules/, web/vendor/) and not code (data/, docs/).
 */
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SKIP = new Set([
  'store',
  'test',
  'bench',
  'scripts',
  'node_modules',
  'data',
  'dist',
  'docs',
  '.git',
  'web/vendor',
]);

/** What knex looks like at a call site. Each pattern has no other meaning in this code base. */
const PATTERNS: readonly { name: string; re: RegExp }[] = [
  {
    name: "import of 'knex'",
    re: /\bfrom\s+['"]knex['"]|\brequire\(\s*['"]knex['"]\s*\)|\bimport\(\s*['"]knex['"]\s*\)/,
  },
  // A table call: a callee whose name ends in db/Db, or trx, tx, knex, with a string literal first argument.
  { name: 'table call', re: /(?:[\w#]*(?:db|Db)|\btrx|\btx|\bknex)\s*\(\s*['"`]/ },
  {
    name: 'query builder method',
    re: /\.\s*(?:where|andWhere|orWhere|whereIn|whereNotIn|whereNot|whereNull|whereNotNull|whereRaw|whereExists|whereNotExists|whereBetween|orderBy|groupBy|having|forUpdate|forShare|onConflict|returning|raw|transaction|first|pluck|insert|increment|decrement|truncate|leftJoin|innerJoin|joinRaw)\s*\(/,
  },
  { name: 'schema or migration call', re: /\.\s*(?:schema|migrate)\s*\.\s*\w+\s*\(/ },
];

function* sourceFiles(dir: string, rel = ''): Generator<string> {
  for (const name of readdirSync(dir)) {
    const r = rel ? `${rel}/${name}` : name;
    if (SKIP.has(r)) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* sourceFiles(full, r);
    else if (/\.(?:ts|mts|cts)$/.test(name) && !name.endsWith('.d.ts')) yield r;
  }
}

/** Comments are not code: a file comment may well say `db('calls')` when explaining what moved where. */
function stripComments(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** Every knex use in a source text, as `line: pattern: text`. */
export function sqlUses(src: string): string[] {
  const code = stripComments(src);
  const found: string[] = [];
  for (const { name, re } of PATTERNS) {
    const g = new RegExp(re.source, 'g');
    for (const m of code.matchAll(g)) {
      const line = code.slice(0, m.index).split('\n').length;
      found.push(`${line}: ${name}: ${src.split('\n')[line - 1].trim()}`);
    }
  }
  return found;
}

describe('store: SQL lives in store/ only', () => {
  it('finds each kind of knex use (the check can fail)', () => {
    const samples = [
      "import knexFactory from 'knex';",
      "const row = await db('calls').where({ id }).first();",
      "await this.#db('event_outbox').update(x);",
      "await this.#o\n  .db('call_credit')\n  .delete();",
      "const r = await readDb('api_keys');",
      "await trx('numbers');",
      'await db.transaction(async (t) => {});',
      "q.whereIn('id', ids);",
      "const x = db.raw('select 1');",
      "await q.orderBy('url');",
      "await knex.schema.createTable('x', () => {});",
    ];
    for (const s of samples) assert.ok(sqlUses(s).length > 0, `not caught: ${s}`);
  });

  it('does not mistake ordinary code for knex', () => {
    const samples = [
      "const b = Buffer.from('x', 'utf8');",
      'const a = Array.from({ length: 3 }, (_, i) => i);',
      "await ctx('x');",
      'const ok = await findCall(db, accountId, id);',
      "// db('calls') in a comment",
      "/* trx('numbers') */ const x = 1;",
      'const first = rows[0];',
      "url.searchParams.get('where');",
    ];
    for (const s of samples) assert.deepEqual(sqlUses(s), [], s);
  });

  it('no file outside store/ (and test/, bench/, scripts/) uses knex', () => {
    const offenders: string[] = [];
    let scanned = 0;
    for (const rel of sourceFiles(ROOT)) {
      scanned++;
      for (const use of sqlUses(readFileSync(path.join(ROOT, rel), 'utf8'))) offenders.push(`${rel}:${use}`);
    }
    assert.ok(scanned > 100, `scanned only ${scanned} files`);
    assert.deepEqual(offenders, [], `move these into a store module:\n${offenders.join('\n')}`);
  });
});
