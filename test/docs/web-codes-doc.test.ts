import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const ROOT = new URL('../../', import.meta.url);
const API_MD = readFileSync(new URL('docs/api.md', ROOT), 'utf8');
/** Where the portal's and console's own codes are thrown. */
const SOURCES = [
  ...readdirSync(new URL('web/', ROOT))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `web/${f}`),
  'api/portal-users.ts',
  'api/operator-users.ts',
];

describe('docs/api.md, the portal and console codes', () => {
  it('has a row for every PORTAL_* and CONSOLE_* code the pages or the CLI can answer with', () => {
    const codes = new Set<string>();
    for (const f of SOURCES)
      for (const m of readFileSync(new URL(f, ROOT), 'utf8').matchAll(/'((?:PORTAL|CONSOLE)_[A-Z_]+)'/g)) codes.add(m[1]!);
    assert.ok(codes.size >= 15, `found ${codes.size} codes in the sources`);
    for (const code of codes) assert.match(API_MD, new RegExp(`^\\| ${code} \\|`, 'm'), `${code} has no row`);
  });
});
