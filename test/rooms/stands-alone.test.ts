import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The repository stands alone: a clone with nothing beside it installs, runs and tests. So no tracked file reads
 * or names a folder beside the checkout (a sibling folder, or an absolute path of the box where it was written);
 * the test data the project needs is in test/fixtures/.
 */
describe('the repository stands alone', () => {
  it('no tracked file names a folder outside the checkout', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
      .toString('utf8')
      .split('\0')
      .filter((f) => f && !f.startsWith('test/fixtures/') && f !== 'package-lock.json');
    const outside = /\.\.\/shared\b|\/work\/(?:shared|main)\b|'\.\.', '\.\.', '\.\.', 'shared'|'\.\.', 'shared'/;
    const offenders = files.filter((f) => outside.test(readFileSync(path.join(ROOT, f), 'latin1')));
    assert.deepEqual(offenders, []);
  });

  it('the RFC 4475 torture messages are in the repository, byte for byte (CRLF kept)', () => {
    const invite = readFileSync(path.join(ROOT, 'test/fixtures/rfc4475/syntax-valid/wsinv.dat'));
    assert.ok(invite.includes(Buffer.from('\r\n')), 'CRLF line ends kept');
  });
});
