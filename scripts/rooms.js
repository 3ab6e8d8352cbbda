// @ts-check
/**
 * The rooms of the code and the imports allowed between them, read from the one place they are written: the
 * floors table in docs/architecture.md. ESLint's `rooms/layering` rule (eslint.config.js) and
 * scripts/check-rooms.js both judge an import with `judgeImport` below.
 *
 * Plain JavaScript on purpose: eslint.config.js loads it, and ESLint on Node 20 cannot load TypeScript without a
 * package this project does not have.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const ROOMS_DOC = 'docs/architecture.md';

/**
 * @typedef {object} Room
 * @property {string} name    'api', 'sip/stack', 'main.ts' (a file of the composition root)
 * @property {boolean} isFile the room is a single file at the top (main.ts, switch.ts)
 * @property {number} floor   0 at the top; -1 for the free rooms
 * @property {boolean} free   test/, bench/, scripts/: may import anything, imported by none
 */

/** @returns {Room[]} */
export function parseRooms(markdown) {
  const begin = markdown.indexOf('<!-- rooms:begin');
  const end = markdown.indexOf('<!-- rooms:end');
  if (begin < 0 || end < begin) throw new Error(`${ROOMS_DOC}: the rooms:begin / rooms:end markers are missing`);
  /** @type {Room[]} */
  const rooms = [];
  for (const line of markdown.slice(begin, end).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !/^(\d+|free)$/.test(cells[1])) continue;
    const free = cells[1] === 'free';
    for (const m of cells[2].matchAll(/`([^`]+)`/g)) {
      const isFile = !m[1].endsWith('/');
      rooms.push({ name: isFile ? m[1] : m[1].slice(0, -1), isFile, floor: free ? -1 : Number(cells[1]), free });
    }
  }
  if (rooms.length === 0) throw new Error(`${ROOMS_DOC}: no rooms found between the markers`);
  return rooms;
}

let cached;
/** The rooms, longest name first (so sip/stack wins over sip). */
export function rooms() {
  cached ??= parseRooms(readFileSync(path.join(ROOT, ROOMS_DOC), 'utf8')).sort((a, b) => b.name.length - a.name.length);
  return cached;
}

const stripExt = (p) => p.replace(/\.(ts|js|mjs|cjs|mts|cts)$/, '');

/** The room of a file given relative to the root with forward slashes, or undefined. */
export function roomOf(rel) {
  return rooms().find((r) => (r.isFile ? stripExt(rel) === stripExt(r.name) : rel.startsWith(r.name + '/')));
}

const label = (r) => (r.isFile ? r.name : r.name + '/');

/** A path relative to the root, forward slashes. */
export const relativeToRoot = (abs) => path.relative(ROOT, abs).split(path.sep).join('/');

/**
 * Judges one import: `fromAbs` is the importing file (absolute), `specifier` what it imports. Returns undefined
 * when the import is allowed (or not a relative import of the project), else why it is not.
 */
export function judgeImport(fromAbs, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const fromRel = relativeToRoot(fromAbs);
  const toRel = relativeToRoot(path.resolve(path.dirname(fromAbs), specifier));
  if (toRel.startsWith('..')) return undefined;
  const from = roomOf(fromRel);
  const to = roomOf(toRel);
  // The floor-0 entries (main.ts, switch.ts, bin/) are together one room, the composition root.
  if (!from || !to || from === to || from.free || (from.floor === 0 && to.floor === 0)) return undefined;
  if (to.free) return `${label(from)} may not import ${label(to)} (tools are imported by no room)`;
  if (to.floor <= from.floor)
    return (
      `${label(from)} may not import ${label(to)} (floor ${to.floor} is not below floor ${from.floor}; ` +
      `a room imports only rooms below it, ${ROOMS_DOC})`
    );
  if (stripExt(toRel) !== `${to.name}/index` && toRel !== to.name)
    return `${label(from)} must import ${label(to)} through ${to.name}/index.ts, not ${toRel}`;
  return undefined;
}

/** The ESLint rule `rooms/layering`: every static import, re-export and literal dynamic import is judged. */
export const layeringRule = {
  meta: {
    type: 'problem',
    docs: { description: `imports follow the rooms' floors (${ROOMS_DOC})` },
    schema: [],
  },
  create(context) {
    const check = (node) => {
      const source = node.source;
      if (!source || source.type !== 'Literal' || typeof source.value !== 'string') return;
      const why = judgeImport(context.filename, source.value);
      if (why) context.report({ node, message: `${why}: '${source.value}'` });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export const roomsPlugin = { rules: { layering: layeringRule } };
