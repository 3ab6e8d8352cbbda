import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SETTINGS } from '../../config/index.js';

describe('README configuration table', () => {
  it('lists every setting with its default (regenerate with `bin/simu config table`)', () => {
    const readme = readFileSync(path.resolve(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    for (const s of SETTINGS) {
      const row = readme.split('\n').find((l) => l.startsWith(`| \`${s.env}\` |`));
      assert.ok(row, `${s.env} is missing from the README`);
      assert.ok(row.includes(`\`${s.default === '' ? '(empty)' : s.default}\``), `${s.env}'s default in the README`);
    }
  });
});
