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

function encode(value: unknown, key: string, seen: Set<object>): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(k: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`non-finite number at '${key}'`);
      return JSON.stringify(value);
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
  if (seen.has(obj)) throw new CanonicalJsonError(`cycle at '${key}'`);
  seen.add(obj);
  try {
    if (Array.isArray(obj)) {
      return `[${obj.map((item, i) => encode(item, String(i), seen) ?? 'null').join(',')}]`;
    }
    const record = obj as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(record).sort(compareKeys)) {
      const encoded = encode(record[k], k, seen);
      if (encoded !== undefined) parts.push(`${JSON.stringify(k)}:${encoded}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    seen.delete(obj);
  }
}

/** The canonical JSON text of `value`. Throws CanonicalJsonError for values JSON cannot carry faithfully. */
export function canonicalJson(value: unknown): string {
  const text = encode(value, '', new Set());
  if (text === undefined) throw new CanonicalJsonError('the top-level value has no JSON form');
  return text;
}
