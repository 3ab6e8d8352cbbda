import assert from 'node:assert/strict';
import { keepableDocument, type LastGoodCall } from '../../calls/prepaid/last-good-documents.js';
import { parseVerbDocument } from '../../verbs/index.js';

/** Issue 23, item 4: which call-control replies may serve later callers (calls/prepaid/last-good-documents.ts). */
describe('calls: the last known good document keeps no per-call state', () => {
  const call: LastGoodCall = {
    id: '6f1c2a9e-0000-4000-8000-00000000abcd',
    sid: 'CA0123456789abcdef',
    accountId: 'acct',
    number: '+254711000001',
    from: '+254733000009',
  };
  const keep = (xml: string, headers: Record<string, string> = {}) =>
    keepableDocument(xml, parseVerbDocument(xml), new Headers(headers), call);

  it('keeps a document that any caller of the number could be given', () => {
    assert.equal(keep('<Response><Say>Karibu.</Say><Gather action="https://x.example/menu"/></Response>'), true);
  });

  it('refuses one marked no-store or private by its reply', () => {
    const xml = '<Response><Say>Karibu.</Say></Response>';
    assert.equal(keep(xml, { 'cache-control': 'no-store' }), false);
    assert.equal(keep(xml, { 'cache-control': 'max-age=0, private' }), false);
    assert.equal(keep(xml, { 'cache-control': 'max-age=60' }), true);
  });

  it("refuses one that names the call's sid or uuid, or the caller's number, anywhere", () => {
    assert.equal(keep(`<Response><Redirect>https://x.example/calls/${call.sid}/next</Redirect></Response>`), false);
    assert.equal(keep(`<Response><Gather action="https://x.example/c?id=${call.id}"/></Response>`), false);
    assert.equal(keep('<Response><Say>Hello 254733000009.</Say></Response>'), false);
  });

  it('refuses one that sets a customPayload', () => {
    const xml = '<Response customPayload="{&quot;order&quot;:1}"><Say>Karibu.</Say></Response>';
    const doc = parseVerbDocument(xml);
    if (doc.customPayload === undefined) return void assert.fail('the parser did not read customPayload');
    assert.equal(keep(xml), false);
  });
});
