/**
 * Canonical JSON: keys sorted, no whitespace. The spec (Webhooks: "Body is built with sorted keys and no extra
 * whitespace") asks for it so that a receiver can reason about the bytes it verifies; the signature itself is
 * over the raw bytes as sent. Events-neutral: the events room can use it for status callbacks unchanged.
 *
 * Rules, chosen to match JSON.stringify wherever it is well defined:
 * - object keys sorted by Unicode code point (as Python's sort_keys does), recursively;
 * - properties whose value is undefined, a function or a symbol are left out; in arrays they become null;
 * - toJSON() is honoured (so a Date becomes its ISO string);
 * - strings are escaped as JSON.stringify escapes them (non-ASCII stays as UTF-8, not \u escapes);
 * - NaN, Infinity, bigint and cycles throw CanonicalJsonError instead of silently turning into null.
 */
import { CanonicalJsonError } from './errors.js';

/**
 * Key order by code point. Code units compare the same way unless one of the first pair that differs is a
 * surrogate (astral characters sort after U+E000..U+FFFF by code point, before them by code unit): keys are ASCII
 * nearly always, so the units are compared and only such a pair goes the slow way.
 */
function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    return x < 0xd800 && y < 0xd800 ? x - y : compareCodePoints(a.slice(i), b.slice(i));
  }
  return a.length - b.length;
}

function compareCodePoints(a: string, b: string): number {
  // Plain `<` compares UTF-16 code units, which orders astral characters before U+E000..U+FFFF.
  const ai = a[Symbol.iterator]();
  const bi = b[Symbol.iterator]();
  for (;;) {
    const x = ai.next();
    const y = bi.next();
    if (x.done === true) return y.done === true ? 0 : -1;
    if (y.done === true) return 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/**
 * The JSON text of a key or string. Short plain ASCII (no quote, backslash or control character) is quoted as it is,
 * the same bytes JSON.stringify gives, without its call; anything else goes through JSON.stringify, which is the
 * faster of the two past a few dozen characters.
 */
function quote(s: string): string {
  if (s.length > 48) return JSON.stringify(s);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/** Key lists sorted lately, as given and in order: objects of one shape (a call's events' data) recur. */
const recentOrders: Array<{ given: string[]; sorted: string[] }> = [];
const RECENT_ORDERS = 16;

const sameKeys = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * `keys` in canonical order: as they are when already in order (an object built in order), else a list sorted for
 * the same keys given in the same order before, else sorted. The lists returned are only read.
 */
function inOrder(keys: string[]): readonly string[] {
  let i = 1;
  while (i < keys.length && compareKeys(keys[i - 1]!, keys[i]!) <= 0) i++;
  if (i >= keys.length) return keys;
  for (const r of recentOrders) if (sameKeys(r.given, keys)) return r.sorted;
  const sorted = [...keys].sort(compareKeys);
  if (recentOrders.length >= RECENT_ORDERS) recentOrders.pop();
  recentOrders.unshift({ given: keys, sorted });
  return sorted;
}

/**
 * `path` holds the objects being encoded, outermost first: a value already on it is a cycle. Objects nest a few
 * levels deep, so a scan of the path costs less than a Set's insert and delete for every object.
 */
function encode(value: unknown, key: string, path: object[]): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(k: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`non-finite number at '${key}'`);
      // A finite number's JSON text is its Number::toString (-0 as 0), what String gives.
      return String(value);
    case 'bigint':
      throw new CanonicalJsonError(`bigint at '${key}' has no JSON form`);
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'object':
      break;
  }
  if (value === null) return 'null';
  const obj = value as object;
  if (path.includes(obj)) throw new CanonicalJsonError(`cycle at '${key}'`);
  path.push(obj);
  try {
    if (Array.isArray(obj)) {
      let out = '[';
      for (let i = 0; i < obj.length; i++) out += `${i > 0 ? ',' : ''}${encode(obj[i], String(i), path) ?? 'null'}`;
      return `${out}]`;
    }
    return members(obj as Record<string, unknown>, undefined, path);
  } finally {
    path.pop();
  }
}

/** The object `{...under, ...over}` (`under` may be absent) encoded, without building it. */
function members(over: Record<string, unknown>, under: Record<string, unknown> | undefined, path: object[]): string {
  const keys = Object.keys(over);
  if (under !== undefined) for (const k of Object.keys(under)) if (!Object.hasOwn(over, k)) keys.push(k);
  let out = '';
  for (const k of inOrder(keys)) {
    const v = under === undefined ? over[k] : Object.hasOwn(over, k) ? over[k] : under[k];
    const encoded = encode(v, k, path);
    if (encoded !== undefined) out += out.length > 0 ? `,${quote(k)}:${encoded}` : `${quote(k)}:${encoded}`;
  }
  return `{${out}}`;
}

/** The canonical JSON text of `value`. Throws CanonicalJsonError for values JSON cannot carry faithfully. */
export function canonicalJson(value: unknown): string {
  const text = encode(value, '', []);
  if (text === undefined) throw new CanonicalJsonError('the top-level value has no JSON form');
  return text;
}

/** The canonical JSON text of a string: the same as `canonicalJson(s)`. */
export const canonicalString = quote;

/**
 * The canonical JSON text of the object `{ ...under, ...over }` (the keys of `over` win), without the copy: a
 * status callback's `data` is its frame's data widened with the call snapshot.
 */
export function canonicalJsonMerged(under: Record<string, unknown> | undefined, over: Record<string, unknown>): string {
  const path: object[] = [over];
  if (under !== undefined) path.push(under);
  return members(over, under, path);
}
