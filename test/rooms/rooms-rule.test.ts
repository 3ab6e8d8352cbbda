import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ESLint } from 'eslint';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** kit/ (floor 9, the bottom) importing api/ (floor 2): upward, so forbidden (docs/architecture.md). */
const PROBE_FILE = 'kit/zz-upward-probe.ts';
const PROBE = "import '../api/index.js';\n\nexport const probe = 1;\n";

/** Only the rule under test runs: the others would judge the probe's style, not its import. */
const onlyRooms = { ruleFilter: ({ ruleId }: { ruleId: string }) => ruleId === 'rooms/layering' };

/**
 * A copy of the working tree (the files git tracks or would track, as they are on disk) in a temporary directory,
 * with node_modules linked, so a probe file is added there and never in the tree others work in.
 */
function copyOfTree(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-rooms-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  })
    .toString('utf8')
    .split('\0')
    .filter(Boolean);
  for (const rel of files) {
    const from = path.join(ROOT, rel);
    if (!existsSync(from)) continue; // deleted in the working tree
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    copyFileSync(from, path.join(dir, rel));
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

function checkRooms(root: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/check-rooms.js')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/**
 * The rooms rule (issue 14, item 1) has two halves, ESLint's rooms/layering per import and scripts/check-rooms.js
 * over the whole graph, both reading the floors table of docs/architecture.md. Each must refuse an upward import
 * and accept the tree as it is.
 */
describe('rooms: the import rule refuses an upward import and passes on the tree', function () {
  this.timeout(180_000);
  let copy: string;

  before(() => {
    copy = copyOfTree();
    writeFileSync(path.join(copy, PROBE_FILE), PROBE);
  });

  after(() => {
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it('scripts/check-rooms.js fails on a tree with kit/ importing api/, naming the import', () => {
    const r = checkRooms(copy);
    assert.notEqual(r.status, 0, r.output);
    assert.match(r.output, /kit\/zz-upward-probe\.ts imports '\.\.\/api\/index\.js': kit\/ may not import api\//);
  });

  it("ESLint's rooms/layering fails on the same file", async () => {
    const eslint = new ESLint({ cwd: copy, ...onlyRooms });
    const [result] = await eslint.lintFiles([path.join(copy, PROBE_FILE)]);
    const rooms = result!.messages.filter((m) => m.ruleId === 'rooms/layering');
    assert.equal(rooms.length, 1, JSON.stringify(result!.messages));
    assert.equal(rooms[0]!.severity, 2, 'an error, so `npm run check` fails');
    assert.match(rooms[0]!.message, /kit\/ may not import api\/ \(floor 2 is not below floor 9/);
  });

  it('ESLint refuses a deep import past a room index too (calls/ into billing/admission.ts)', async () => {
    const eslint = new ESLint({ cwd: copy, ...onlyRooms });
    const [result] = await eslint.lintText("import { Admission } from '../billing/admission.js';\nvoid Admission;\n", {
      filePath: path.join(copy, 'calls/zz-deep-probe.ts'),
    });
    const rooms = result!.messages.filter((m) => m.ruleId === 'rooms/layering');
    assert.equal(rooms.length, 1, JSON.stringify(result!.messages));
    assert.match(rooms[0]!.message, /must import billing\/ through billing\/index\.ts/);
  });

  it('scripts/check-rooms.js passes on the tree itself', () => {
    const r = checkRooms(ROOT);
    assert.equal(r.status, 0, r.output);
    assert.match(r.output, /no forbidden import, no cycle/);
  });

  it("ESLint's rooms/layering passes on every source file of the tree", async () => {
    const eslint = new ESLint({ cwd: ROOT, ...onlyRooms });
    const results = await eslint.lintFiles(['.']);
    const offences = results.flatMap((r) =>
      r.messages.filter((m) => m.ruleId === 'rooms/layering').map((m) => `${r.filePath}:${m.line} ${m.message}`),
    );
    assert.ok(results.length > 200, `linted ${results.length} files`);
    assert.deepEqual(offences, []);
  });
});
