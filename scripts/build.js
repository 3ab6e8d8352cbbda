#!/usr/bin/env node
/**
 * `npm run build`: the switch and the CLI compiled to JavaScript in dist/ (tsc with tsconfig.build.json), with the
 * files the rooms read beside their modules (web/static, the verbs XSD, the UDP front's worker, docs/) copied in.
 * Packages are found in the checkout's node_modules, as Node looks for them from dist/ upwards. `--if-stale` builds only when a product file is newer than the
 * last build. Production runs `node dist/main.js`; tests and development run the TypeScript through tsx.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'dist');
const STAMP = path.join(DIST, '.build-stamp');
/** The product: every room of docs/architecture.md but test/, bench/ and scripts/. */
const ROOMS = [
  'bin',
  'web',
  'cli',
  'api',
  'calls',
  'sip',
  'verbs',
  'billing',
  'media',
  'events',
  'store',
  'config',
  'kit',
  'numbers',
  'metrics',
];
const TOP_FILES = ['main.ts', 'switch.ts'];

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(file);
    else if (entry.isFile()) yield file;
  }
}

function productFiles() {
  const files = TOP_FILES.map((f) => path.join(ROOT, f));
  for (const room of [...ROOMS, 'docs']) files.push(...walk(path.join(ROOT, room)));
  files.push(
    path.join(ROOT, 'tsconfig.json'),
    path.join(ROOT, 'tsconfig.build.json'),
    path.join(ROOT, 'package-lock.json'),
  );
  return files;
}

function stale() {
  if (!existsSync(STAMP)) return true;
  const built = statSync(STAMP).mtimeMs;
  return productFiles().some((f) => statSync(f).mtimeMs > built);
}

if (process.argv.includes('--if-stale') && !stale()) process.exit(0);

const t0 = Date.now();
rmSync(STAMP, { force: true });
const tsc = spawnSync(
  process.execPath,
  [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
  {
    cwd: ROOT,
    stdio: 'inherit',
  },
);
if (tsc.status !== 0) {
  process.stderr.write('simu build: the TypeScript compiler failed (above)\n');
  process.exit(1);
}
let copied = 0;
for (const file of productFiles()) {
  const rel = path.relative(ROOT, file);
  if (rel.endsWith('.ts') || rel.startsWith('tsconfig') || rel === 'package-lock.json') continue;
  if (!rel.startsWith('docs/') && path.basename(rel) === 'README.md') continue;
  mkdirSync(path.dirname(path.join(DIST, rel)), { recursive: true });
  copyFileSync(file, path.join(DIST, rel));
  copied++;
}
// Earlier builds linked dist/node_modules; a tree walker following it would read every package twice.
rmSync(path.join(DIST, 'node_modules'), { force: true });
writeFileSync(STAMP, `${new Date().toISOString()}\n`);
process.stderr.write(
  `simu build: dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s (${copied} files beside the modules)\n`,
);
