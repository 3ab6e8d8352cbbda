import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Product code: the rooms' sources, not the tests, benches, docs or built output. */
const PRODUCT = /\.(?:ts|js|css|html|sh)$/;
const NOT_PRODUCT = /^(?:test|bench|docs|node_modules|dist)\//;

interface Comment {
  /** Offset of the comment's first character in the file. */
  readonly pos: number;
  readonly text: string;
}

/** Every comment of a TypeScript or JavaScript file, found by the compiler's parser (not confused by strings). */
function scriptComments(file: string, source: string): Comment[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const seen = new Map<number, Comment>();
  const add = (ranges: readonly ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) seen.set(r.pos, { pos: r.pos, text: source.slice(r.pos, r.end) });
  };
  const visit = (node: ts.Node): void => {
    add(ts.getLeadingCommentRanges(source, node.pos));
    add(ts.getTrailingCommentRanges(source, node.end));
    // Tokens are not nodes of the tree: a comment before a `}` or a `,` is found through the child list.
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  return [...seen.values()];
}

/** Comments of the other languages: block comments of CSS, `<!-- -->` of HTML, `#` to the line's end of shell. */
function otherComments(file: string, source: string): Comment[] {
  const re = file.endsWith('.css')
    ? /\/\*[\s\S]*?\*\//g
    : file.endsWith('.html')
      ? /<!--[\s\S]*?-->/g
      : /(?<=^|\s)#(?!!).*$/gm; // shell: `#` opening a word, not the `#!` line
  return [...source.matchAll(re)].map((m) => ({ pos: m.index, text: m[0] }));
}

/** A figure with the unit of a measurement: time, size, share, rate, or a percentile. */
const FIGURE = String.raw`(?:\d[\d,.]*\s?(?:ms|µs|us|ns|s|%|[KMG]i?B|x|calls/s|legs/s|/s)(?![\w/])|\bp9\d\b)`;

/**
 * What a comment must not carry, each with what it names. Issue numbers, the bench runs and measurements that led
 * to a rule, and dates are history: docs/ or the commit body hold them, a comment keeps the rule and its reason.
 * The patterns are narrow on purpose: a bench's path (`bench/calls/carrier.bench.ts`), "benches" as the users of an
 * API, "measured" without a figure, a CSS colour (code, not a comment) are all fine.
 */
const FORBIDDEN: readonly { readonly what: string; readonly re: RegExp }[] = [
  { what: 'an issue number', re: /\bissues?\s*#?\d+/i },
  { what: 'an issue number', re: /(?<![\w&#])#\d{1,5}(?![\w-])/ },
  { what: 'a pull request number', re: /\b(?:PR|pull request)\s*#?\d+/i },
  {
    what: 'a bench run',
    re: new RegExp(
      String.raw`\bbench(?:mark)?(?:'s)?\b(?![/.-])[^.;]{0,120}?${FIGURE}|${FIGURE}[^.;]{0,120}?\bbench(?:mark)?\b(?![/.-])`,
      'i',
    ),
  },
  { what: 'a bench run', re: /\b(?:the|a|this|that|same|our)\s+(?:[\w-]+\s+)?bench(?:mark)?(?:ed)?\b(?!['/.-])/i },
  {
    what: 'a measurement',
    re: new RegExp(String.raw`\bmeasured\b[^.;]{0,80}?${FIGURE}|${FIGURE}[^.;]{0,80}?\bmeasured\b`, 'i'),
  },
  {
    what: 'a run on this machine',
    re: /\b(?:learnt|learned|found|seen|measured|profiled)\s+on\s+this\s+(?:box|machine)\b/i,
  },
  {
    what: 'a load the figure was taken at',
    re: /\bat\s+\d[\d,]*\s*(?:new\s+)?(?:calls|legs|registrations|requests)\/s\b/i,
  },
  { what: 'a date', re: /\b20\d\d-[01]\d-[0-3]\d\b(?!T)/ },
];

/** The comment's text with each comment marker and line break as one space, offsets kept (one character each). */
function flatten(text: string): string {
  return text.replace(/^\s*(?:\/\/+|\/\*+|\*+(?!\/)|#|<!--)/gm, (m) => ' '.repeat(m.length)).replace(/\n/g, ' ');
}

function offenders(file: string, source: string): string[] {
  const comments = /\.(?:ts|js)$/.test(file) ? scriptComments(file, source) : otherComments(file, source);
  const found: string[] = [];
  for (const c of comments) {
    const flat = flatten(c.text);
    for (const { what, re } of FORBIDDEN) {
      const m = re.exec(flat);
      if (!m) continue;
      const line = source.slice(0, c.pos + m.index).split('\n').length;
      found.push(`${file}:${line}: ${what}: "${m[0].trim()}"`);
    }
  }
  return found;
}

describe('comments in product code state rules, not history', () => {
  it('no comment cites an issue number, a bench run, a measurement or a date', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
      .toString('utf8')
      .split('\0')
      .filter((f) => PRODUCT.test(f) && !NOT_PRODUCT.test(f));
    assert.ok(files.length > 100, `expected the product's files, found ${files.length}`);
    const found = files.flatMap((f) => offenders(f, readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(
      found,
      [],
      `comments carrying history (move it to docs/ or the commit body):\n${found.join('\n')}`,
    );
  });

  it('the patterns catch history and pass rules', () => {
    const bad = [
      '// the retry limit (issue 22)',
      '/** Beyond the spec (issue\n * 19): a domain. */',
      '// fixed in #123',
      '// the carrier bench at 400/s: p99 1 s',
      "/* about 0.6 % of the carrier bench's main thread */",
      '// measured at 1-24 ms of stalled event loop',
      '// 190 MB of heap at 200 calls/s',
      '// Three things learnt on this box',
      '// changed on 2026-03-04',
    ];
    const good = [
      '// every room but test/, bench/ and scripts/',
      '/** RTP packets received (benches, diagnostics). */',
      '// Counters of the group commit, for benches and tests.',
      '// the window calls/s is measured over',
      '// `prefix:9#` gives `9#254712345678`',
      '// See RFC 3261 §17.1.1.2: Timer A doubles up to T2',
      '// the issuer of a token; `&#39;` is an apostrophe',
      '// a date such as 2026-01-31T08:00:00Z',
    ];
    for (const c of bad) assert.notDeepEqual(offenders('x.ts', `${c}\nexport {};\n`), [], `should be refused: ${c}`);
    for (const c of good) assert.deepEqual(offenders('x.ts', `${c}\nexport {};\n`), [], `should pass: ${c}`);
    assert.deepEqual(offenders('x.css', 'a { color: #276749; }\n'), [], 'a CSS colour is code, not an issue');
    assert.notDeepEqual(offenders('x.css', '/* ---- issue 21: charts ---- */\n'), []);
    assert.notDeepEqual(offenders('x.sh', 'echo hi # see issue 4\n'), []);
  });
});
