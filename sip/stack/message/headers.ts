/**
 * An ordered header list. Names are stored in their canonical lower-case long form (compact forms of RFC 3261
 * §7.3.3 expanded on the way in); values are stored as raw strings, one entry per comma-separated element for
 * the list headers of §7.3.1, so that `Via` and `Route` are counted and rewritten element by element.
 */
import { splitList } from './grammar.js';

// Maps, not object literals: a header named `constructor` or `toString` must not find Object.prototype's.
const COMPACT = new Map<string, string>(
  Object.entries({
    i: 'call-id',
    m: 'contact',
    e: 'content-encoding',
    l: 'content-length',
    c: 'content-type',
    f: 'from',
    s: 'subject',
    k: 'supported',
    t: 'to',
    v: 'via',
    o: 'event',
    r: 'refer-to',
    b: 'referred-by',
    u: 'allow-events',
    x: 'session-expires',
    y: 'identity',
  }),
);

/** Headers whose comma-separated values are separate elements (§7.3.1). Others (Date, auth) keep their commas. */
const LIST_HEADERS = new Set([
  'via',
  'route',
  'record-route',
  'contact',
  'allow',
  'supported',
  'require',
  'proxy-require',
  'unsupported',
  'accept',
  'accept-encoding',
  'accept-language',
  'content-encoding',
  'allow-events',
  'path',
  'service-route',
]);

const CANONICAL = new Map<string, string>(
  Object.entries({
    'call-id': 'Call-ID',
    cseq: 'CSeq',
    'www-authenticate': 'WWW-Authenticate',
    'mime-version': 'MIME-Version',
    rack: 'RAck',
    rseq: 'RSeq',
    'min-se': 'Min-SE',
  }),
);

/** Display forms made so far (a response writes every header name: the regex ran per header per message). */
const displayed = new Map<string, string>();

/** Names normalised so far, as written (a message's few names, again and again): one lookup instead of two. */
const normalized = new Map<string, string>();

export function normalizeName(name: string): string {
  let key = normalized.get(name);
  if (key === undefined) {
    const lower = name.toLowerCase();
    key = COMPACT.get(lower) ?? lower;
    if (normalized.size < 1000) normalized.set(name, key); // names from outside are many; the bound keeps it small
  }
  return key;
}

export function displayName(name: string): string {
  let shown = CANONICAL.get(name) ?? displayed.get(name);
  if (shown === undefined) {
    shown = name.replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase());
    if (displayed.size < 1000) displayed.set(name, shown); // names from outside are many; the bound keeps it small
  }
  return shown;
}

export function isListHeader(name: string): boolean {
  return LIST_HEADERS.has(name);
}

export class SipHeaders {
  readonly #entries: Array<[string, string]> = [];

  /** Appends a header as received; list headers are split into elements. Returns false on a bad list. */
  add(name: string, value: string): boolean {
    const key = normalizeName(name);
    if (LIST_HEADERS.has(key) && value.includes(',')) {
      const parts = splitList(value);
      if (!parts) {
        this.#entries.push([key, value]); // kept whole so a 400 can still copy it
        return false;
      }
      for (const p of parts) this.#entries.push([key, p]);
    } else {
      this.#entries.push([key, value]);
    }
    return true;
  }

  append(name: string, value: string): this {
    this.#entries.push([normalizeName(name), value]);
    return this;
  }

  /** Puts a value in front of the others of the same name (a new top Via, a Route). */
  prepend(name: string, value: string): this {
    const key = normalizeName(name);
    const i = this.#entries.findIndex(([n]) => n === key);
    this.#entries.splice(i < 0 ? this.#entries.length : i, 0, [key, value]);
    return this;
  }

  get(name: string): string | undefined {
    const key = normalizeName(name);
    for (const [n, v] of this.#entries) if (n === key) return v;
    return undefined;
  }

  getAll(name: string): string[] {
    const key = normalizeName(name);
    const out: string[] = [];
    for (const [n, v] of this.#entries) if (n === key) out.push(v);
    return out;
  }

  count(name: string): number {
    const key = normalizeName(name);
    let n = 0;
    for (const e of this.#entries) if (e[0] === key) n++;
    return n;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** Replaces every value of `name` with one value (or several for a list header). */
  set(name: string, value: string | string[]): this {
    const key = normalizeName(name);
    const i = this.#entries.findIndex(([n]) => n === key);
    if (i < 0) {
      // Not there yet (most headers a response is given): appended, nothing to remove or move.
      if (Array.isArray(value)) for (const v of value) this.#entries.push([key, v]);
      else this.#entries.push([key, value]);
      return this;
    }
    const values = Array.isArray(value) ? value : [value];
    this.delete(key); // every one is at or after i: the first's place stays i
    this.#entries.splice(i, 0, ...values.map((v): [string, string] => [key, v]));
    return this;
  }

  delete(name: string): this {
    const key = normalizeName(name);
    for (let i = this.#entries.length - 1; i >= 0; i--) if (this.#entries[i][0] === key) this.#entries.splice(i, 1);
    return this;
  }

  /** Removes the first value of `name` (a proxy popping its Via, a UA consuming a Route). */
  shift(name: string): string | undefined {
    const key = normalizeName(name);
    const i = this.#entries.findIndex(([n]) => n === key);
    if (i < 0) return undefined;
    return this.#entries.splice(i, 1)[0][1];
  }

  get size(): number {
    return this.#entries.length;
  }

  entries(): ReadonlyArray<readonly [string, string]> {
    return this.#entries;
  }

  clone(): SipHeaders {
    const h = new SipHeaders();
    for (const [n, v] of this.#entries) h.#entries.push([n, v]);
    return h;
  }
}

/** Headers an application adds to a request or response it builds (name -> value or values). */
export type HeaderInit = Record<string, string | string[]>;

/** Sets every header of `init` on `h`, replacing any of the same name. */
export function applyHeaders(h: SipHeaders, init: HeaderInit | undefined): void {
  if (!init) return;
  for (const [name, value] of Object.entries(init)) h.set(name, value);
}
