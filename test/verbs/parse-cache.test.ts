import assert from 'node:assert/strict';
import { parseVerbDocument, VerbDocumentError } from '../../verbs/index.js';

/** verbs/parse.ts keeps recently parsed documents: the same text gives the same document, shared and frozen. */
describe('verbs/parse: parsed-document cache', () => {
  const doc = '<Response><Dial timeout="12"><Number>+254722000001</Number></Dial></Response>';

  it('gives the same frozen document for the same text, and a new one for other text', () => {
    const a = parseVerbDocument(doc);
    const b = parseVerbDocument(doc);
    assert.equal(a, b);
    assert.ok(Object.isFrozen(a) && Object.isFrozen(a.verbs) && Object.isFrozen(a.verbs[0]));
    assert.throws(() => {
      (a.verbs[0] as { timeout: number }).timeout = 99;
    }, TypeError);
    const c = parseVerbDocument(doc.replace('12', '13'));
    assert.notEqual(c, a);
    assert.equal((c.verbs[0] as { timeout: number }).timeout, 13);
  });

  it('refuses a bad document every time (errors are not kept as documents)', () => {
    const bad = '<Response><Dial timeout="x">+254722000001</Dial></Response>';
    assert.throws(() => parseVerbDocument(bad), VerbDocumentError);
    assert.throws(() => parseVerbDocument(bad), VerbDocumentError);
  });
});
