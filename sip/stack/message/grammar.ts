/**
 * Small scanners for the RFC 3261 §25.1 grammar pieces shared by many headers: tokens, quoted strings,
 * generic parameters and comma-separated lists. All are pure and never throw; they return null on bad input.
 * Untrusted text meets only left-to-right scans and regexes that cannot backtrack more than a constant per
 * character (one anchored character class, or bounded repeats): a backtracking regex on a long run of blanks
 * once froze the event loop for seconds.
 */

// token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~")
const TOKEN_RE = /^[A-Za-z0-9\-.!%*_+`'~]+$/;
export function isToken(s: string): boolean {
  return TOKEN_RE.test(s);
}

/** Linear whitespace inside a header line after unfolding: SP or HTAB (§25.1 WSP). */
export function isWsp(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** The index of the first character at or after `i` that is not SP/HTAB. */
export function skipWsp(s: string, i: number): number {
  while (i < s.length && isWsp(s.charCodeAt(i))) i++;
  return i;
}

/**
 * `s` without trailing SP/HTAB. A scan from the end: the regex `/[ \t]+$/` retries from every position of a
 * long run of blanks that is followed by something else, quadratic in the run.
 */
export function trimWspEnd(s: string): string {
  let end = s.length;
  while (end > 0 && isWsp(s.charCodeAt(end - 1))) end--;
  return end === s.length ? s : s.slice(0, end);
}

/** True when `s` is 1 to `maxLen` ASCII digits. */
export function isDigits(s: string, maxLen: number): boolean {
  if (s.length === 0 || s.length > maxLen) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** Parameters in order; a value of null is a parameter without "=" (e.g. `;lr`). */
export type Params = Map<string, string | null>;

/** Index just past the closing quote of a quoted-string starting at `start`, or -1 if unterminated. */
export function skipQuoted(s: string, start: number): number {
  for (let i = start + 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x5c)
      i++; // quoted-pair: backslash escapes the next char (§25.1)
    else if (c === 0x22) return i + 1;
  }
  return -1;
}

/** Removes the quotes and quoted-pair escapes of a quoted-string. */
export function unquote(s: string): string {
  if (s.length < 2 || s[0] !== '"') return s;
  const inner = s.slice(1, -1);
  return inner.includes('\\') ? inner.replace(/\\(.)/gs, '$1') : inner; // most have no escape: no regex run
}

export function quote(s: string): string {
  return '"' + s.replace(/(["\\])/g, '\\$1') + '"';
}

/**
 * Splits a header value at top-level commas (outside quotes and angle brackets), for headers that RFC 3261 §7.3.1
 * lets be combined into one line. Returns null when a quote or bracket is left open or an element is empty.
 */
export function splitList(value: string): string[] | null {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '"') {
      const end = skipQuoted(value, i);
      if (end < 0) return null;
      i = end - 1;
    } else if (c === '<') depth++;
    else if (c === '>') depth--;
    else if (c === ',' && depth === 0) {
      out.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  if (depth !== 0) return null;
  out.push(value.slice(start).trim());
  if (out.some((p) => p === '')) return null;
  return out;
}

/**
 * Parses `;name[=value]` parameters (generic-param, §25.1). The text must start with ';' or be empty.
 * Values may be tokens, hosts or quoted strings; quoted values are kept with their quotes.
 */
export function parseParams(s: string): Params | null {
  const params: Params = new Map();
  let i = 0;
  const n = s.length;
  while (i < n) {
    while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
    if (i >= n) break;
    if (s[i] !== ';') return null;
    i++;
    while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
    let j = i;
    while (j < n && s[j] !== '=' && s[j] !== ';' && s[j] !== ' ' && s[j] !== '\t') j++;
    const name = s.slice(i, j);
    if (!isToken(name)) return null;
    i = j;
    while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
    let value: string | null = null;
    if (s[i] === '=') {
      i++;
      while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
      if (s[i] === '"') {
        const end = skipQuoted(s, i);
        if (end < 0) return null;
        value = s.slice(i, end);
        i = end;
      } else {
        j = i;
        while (j < n && s[j] !== ';' && s[j] !== ' ' && s[j] !== '\t') j++;
        value = s.slice(i, j);
        // token / host (including IPv6 reference) per gen-value
        if (!/^[A-Za-z0-9\-.!%*_+`'~:[\]]+$/.test(value)) return null;
        i = j;
      }
    }
    params.set(name.toLowerCase(), value);
  }
  return params;
}

export function formatParams(params: Params): string {
  let out = '';
  for (const [k, v] of params) out += v === null ? `;${k}` : `;${k}=${v}`;
  return out;
}
