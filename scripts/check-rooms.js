// @ts-check
/**
 * The whole-graph half of the room check (docs/architecture.md; ESLint's rooms/layering judges each import as it
 * is written): reads every import of every source file with the TypeScript scanner, and fails, printing each
 * offence, on
 *   - an import a room may not make (upward, sideways, or past a room's index.ts),
 *   - a TypeScript file that belongs to no room (a new folder must be given a floor first),
 *   - an import cycle among the rooms' files (type-only imports included), printed as a path.
 * Run by `npm run check`; `node scripts/check-rooms.js`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT, judgeImport, relativeToRoot, roomOf } from './rooms.js';

const SKIP = new Set(['node_modules', '.git', 'data', 'dist']);
const SKIP_PATHS = new Set(['web/vendor']);
const SOURCE = /\.(ts|mts|js|mjs)$/;

/** @param {string} dir @param {string[]} out */
function walk(dir, out) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name);
    if (SKIP.has(e.name) || SKIP_PATHS.has(relativeToRoot(abs))) continue;
    if (e.isDirectory()) walk(abs, out);
    else if (SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(abs);
  }
  return out;
}

/** The file a relative specifier names: itself, its .ts twin (NodeNext writes .js), or a folder's index.ts. */
function resolve(fromAbs, specifier) {
  const abs = path.resolve(path.dirname(fromAbs), specifier);
  const tries = [abs, abs.replace(/\.js$/, '.ts'), abs.replace(/\.mjs$/, '.mts'), path.join(abs, 'index.ts')];
  return tries.find((p) => existsSync(p) && statSync(p).isFile());
}

const problems = [];
const files = walk(ROOT, []);
/** @type {Map<string, string[]>} file (relative) -> files it imports (relative), only between roomed files */
const graph = new Map();

for (const abs of files) {
  const rel = relativeToRoot(abs);
  const room = roomOf(rel);
  if (!room) {
    if (/\.m?ts$/.test(rel))
      problems.push(`${rel}: belongs to no room; give its folder a floor in docs/architecture.md`);
    continue;
  }
  const edges = [];
  for (const imp of ts.preProcessFile(readFileSync(abs, 'utf8'), true, true).importedFiles) {
    if (!imp.fileName.startsWith('.')) continue;
    const why = judgeImport(abs, imp.fileName);
    if (why) problems.push(`${rel} imports '${imp.fileName}': ${why}`);
    const target = resolve(abs, imp.fileName);
    if (!target) {
      if (/\.m?ts$/.test(rel)) problems.push(`${rel} imports '${imp.fileName}', which names no file`);
      continue;
    }
    const targetRoom = roomOf(relativeToRoot(target));
    if (!room.free && targetRoom && !targetRoom.free) edges.push(relativeToRoot(target));
  }
  if (!room.free) graph.set(rel, edges);
}

// Cycles: Tarjan's strongly connected components; each one larger than a file (or a file importing itself) is
// printed as one concrete cycle through it.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
/** @param {string} v */
function connect(v) {
  index.set(v, counter);
  low.set(v, counter++);
  stack.push(v);
  onStack.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!index.has(w)) {
      connect(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) === index.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(new Set(c));
  }
}
for (const v of graph.keys()) if (!index.has(v)) connect(v);

/** A shortest cycle from the component's first file back to itself, staying inside the component. */
function cycleThrough(component) {
  const start = [...component].sort()[0];
  const from = new Map([[start, '']]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const between = [];
        for (let u = v; u !== start; u = from.get(u)) between.unshift(u);
        return [start, ...between, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}
for (const c of components) problems.push(`import cycle: ${cycleThrough(c).join(' -> ')}`);

if (problems.length > 0) {
  for (const p of problems) console.error(`rooms: ${p}`);
  console.error(`rooms: ${problems.length} problem(s); the allowed graph is in docs/architecture.md`);
  process.exitCode = 1;
} else console.log(`rooms: ${graph.size} files in rooms, no forbidden import, no cycle`);
