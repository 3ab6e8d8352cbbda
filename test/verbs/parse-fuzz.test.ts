import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_LOOP, VERB_NAMES, VerbDocumentError, parseVerbDocument, type Verb } from '../../verbs/index.js';

/** Either a document whose every verb keeps the type's promises, or a VerbDocumentError; nothing else. */
let accepted = 0;

function parsesOrRefuses(xml: string): void {
  let verbs: readonly Verb[];
  try {
    verbs = parseVerbDocument(xml).verbs;
    accepted += verbs.length > 0 ? 1 : 0;
  } catch (err) {
    assert.ok(err instanceof VerbDocumentError, `threw ${String(err)}`);
    assert.ok(err.problems.length > 0);
    return;
  }
  const isInt = (n: number) => Number.isSafeInteger(n) && n >= 0;
  const isHttp = (u: string) => /^https?:$/.test(new URL(u).protocol);
  for (const v of verbs) {
    assert.ok(isInt(v.line) && v.line >= 1);
    switch (v.verb) {
      case 'Say':
        assert.ok(v.text.length > 0 && v.loop >= 1 && v.loop <= MAX_LOOP);
        break;
      case 'Play':
        assert.ok(v.loop >= 1 && v.loop <= MAX_LOOP);
        if (v.source.kind === 'url') assert.ok(isHttp(v.source.url));
        break;
      case 'Dial':
        assert.ok(isInt(v.timeout) && v.timeout >= 1 && isInt(v.timeLimit));
        // A number as people write it (E.164 or national); read into E.164 with the account's country when dialled.
        if (v.target.kind === 'number') assert.match(v.target.number, /^\+?[0-9][0-9 .()-]{1,31}$/);
        if (v.action !== undefined) assert.ok(isHttp(v.action));
        break;
      case 'Record':
        assert.ok(isInt(v.maxLength) && isInt(v.timeout) && typeof v.playBeep === 'boolean');
        if (v.action !== undefined) assert.ok(isHttp(v.action));
        break;
      case 'Redirect':
        assert.ok(isHttp(v.url));
        break;
      case 'Pause':
        assert.ok(isInt(v.length));
        break;
      default:
        break;
    }
  }
}

const names = fc.constantFrom(...VERB_NAMES, 'Pay', 'say', 'Number', 'Extension');
const attrNames = fc.constantFrom(
  'loop',
  'voice',
  'language',
  'asset',
  'action',
  'method',
  'timeout',
  'callerId',
  'timeLimit',
  'record',
  'maxLength',
  'finishOnKey',
  'playBeep',
  'channels',
  'length',
  'foo',
);
const attrValues = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '30',
    '-1',
    '1001',
    '86401',
    'true',
    'false',
    'POST',
    'GET',
    'dual',
    '#',
    '+254711000002',
    'https://a.example/x',
    '/rel',
    'x y',
    '',
  ),
  fc.string({ maxLength: 12 }),
);
const texts = fc.oneof(
  fc.constantFrom(
    '',
    'hello',
    '+254711000002',
    'https://a.example/a.wav',
    'ftp://x/y',
    '1001',
    ' &amp; ',
    '<![CDATA[x < y]]>',
  ),
  fc.string({ maxLength: 20 }).map((s) => s.replace(/[<&]/g, '')),
);

interface Node {
  name: string;
  attrs: Array<[string, string]>;
  text: string;
  children: readonly Node[];
}
const node: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.record({
    name: names,
    attrs: fc.uniqueArray(fc.tuple(attrNames, attrValues), { maxLength: 3, selector: ([k]) => k }),
    text: texts,
    children: fc.oneof({ depthSize: 'small' }, fc.constant([]), fc.array(tie('node'), { maxLength: 2 })),
  }),
})).node;

const esc = (s: string) =>
  s
    .replace(/&(?!amp;)/g, '&amp;')
    .replace(/"/g, '&quot;')
    .replace(/</g, '&lt;');
const render = (n: Node): string =>
  `<${n.name}${n.attrs.map(([k, v]) => ` ${k}="${esc(v)}"`).join('')}>${n.text}${n.children.map(render).join('')}</${n.name}>`;

/** Attributes drawn from a per-verb table of valid values, so most generated documents are accepted. */
function validAttrs(table: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  return fc
    .subarray(Object.keys(table))
    .chain((keys) => fc.tuple(...keys.map((k) => table[k]!.map((v) => ` ${k}="${v}"`))))
    .map((parts) => parts.join(''));
}
const int = (min: number, max: number) => fc.integer({ min, max }).map(String);
const url = fc.constantFrom('https://a.example/x', 'http://b.example:8080/y?z=1&amp;w=2');
const e164 = fc.constantFrom('+254711000002', '+12025550123');
const validVerb: fc.Arbitrary<string> = fc.oneof(
  validAttrs({ loop: int(0, 1000), voice: fc.constant('alice'), language: fc.constant('sw-KE') }).map(
    (a) => `<Say${a}>Habari</Say>`,
  ),
  fc
    .tuple(validAttrs({ loop: int(0, 1000) }), fc.boolean(), url)
    .map(([a, asset, u]) => (asset ? `<Play${a} asset="tone"/>` : `<Play${a}>${u}</Play>`)),
  fc
    .tuple(
      validAttrs({
        action: url,
        timeout: int(1, 600),
        callerId: e164,
        timeLimit: int(1, 86400),
        record: fc.constantFrom('do-not-record', 'record-from-answer-dual'),
      }),
      fc.constantFrom('text', 'Number', 'Extension'),
      e164,
    )
    .map(([a, form, n]) =>
      form === 'text'
        ? `<Dial${a}>${n}</Dial>`
        : form === 'Number'
          ? `<Dial${a}><Number>${n}</Number></Dial>`
          : `<Dial${a}><Extension>1001</Extension></Dial>`,
    ),
  validAttrs({
    action: url,
    maxLength: int(1, 86400),
    timeout: int(0, 86400),
    finishOnKey: fc.constantFrom('', '#', '1234567890*#'),
    playBeep: fc.constantFrom('true', 'false', '1', '0'),
  }).map((a) => `<Record${a}/>`),
  validAttrs({ channels: fc.constantFrom('mono', 'dual'), maxLength: int(1, 86400) }).map(
    (a) => `<RecordSession${a}/>`,
  ),
  url.map((u) => `<Redirect>${u}</Redirect>`),
  validAttrs({ length: int(0, 3600) }).map((a) => `<Pause${a}/>`),
  fc.constant('<Hangup/>'),
);

describe('verbs/parse: fuzz', () => {
  it('generated verb documents either parse into well-typed verbs or are refused with VerbDocumentError', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof({ weight: 4, arbitrary: validVerb }, { weight: 1, arbitrary: node.map(render) }), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.boolean(),
        (verbs, newlines) => {
          parsesOrRefuses(`<Response>${verbs.join(newlines ? '\n' : '')}</Response>`);
        },
      ),
      { numRuns: 400 },
    );
    // The generator must reach the accepting branch too, or the invariants above were never checked.
    assert.ok(accepted >= 20, `only ${accepted} of 400 generated documents with verbs were accepted`);
  });

  it('documents made only of valid verbs are always accepted, one typed verb per element', () => {
    fc.assert(
      fc.property(fc.array(validVerb, { maxLength: 8 }), (verbs) => {
        const doc = parseVerbDocument(`<Response>\n${verbs.join('\n')}\n</Response>`);
        assert.equal(doc.verbs.length, verbs.length);
        assert.deepEqual(
          doc.verbs.map((v) => v.line),
          verbs.map((_, i) => i + 2),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary text never crashes the parser', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => parsesOrRefuses(s)),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (s) => parsesOrRefuses(`<Response>${s}</Response>`)),
      { numRuns: 300 },
    );
  });
});
