import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import * as events from '../../events/index.js';
import { requestUrl } from '../../kit/index.js';
import { CanonicalJsonError, canonicalJson, signWebhook } from '../../verbs/index.js';

/**
 * The spec's words (Authentication, item 6): "base64 of HMAC-SHA256, keyed with the account's signing secret,
 * over the concatenation of the request URL, the timestamp string, and the raw body bytes exactly as sent".
 */
function specSignature(secret: string, url: string, timestamp: string, body: Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.concat([Buffer.from(url, 'utf8'), Buffer.from(timestamp, 'utf8'), body]))
    .digest('base64');
}

describe('verbs/sign: webhook signature', () => {
  it('matches a vector computed outside Node (Python hmac) for a URL with a query and a non-ASCII body', () => {
    const url = 'https://app.example.com/voice?step=2&lang=sw';
    const body = canonicalJson({ From: '+254700000001', Greeting: 'Habari, José — 你好 ☎', CallSid: 'call_abc' });
    assert.equal(body, '{"CallSid":"call_abc","From":"+254700000001","Greeting":"Habari, José — 你好 ☎"}');
    assert.equal(
      signWebhook('whsec_test_123', url, '1763785200', body),
      'm+3s4gO0TlqK+pJrQqyB9l0WSaiUl2E3HOQKnMWsdK8=',
    );
  });

  it('agrees with the spec formula for any secret, URL, timestamp and body', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.webUrl({ withQueryParameters: true }),
        fc.integer({ min: 0, max: 2 ** 32 }),
        fc.string({ unit: 'grapheme' }),
        (secret, url, ts, text) => {
          const body = canonicalJson({ text });
          // "The request URL" is the URL as requested (kit/request-url.ts): fast-check's URLs may carry a
          // fragment, upper-case hosts or an empty path, none of which is sent as written.
          const expected = specSignature(secret, requestUrl(url), String(ts), Buffer.from(body, 'utf8'));
          assert.equal(signWebhook(secret, requestUrl(url), ts, body), expected);
          assert.equal(signWebhook(secret, url, ts, body), expected);
          assert.equal(signWebhook(secret, url, String(ts), Buffer.from(body, 'utf8')), expected);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('changes when any of secret, URL, timestamp or body changes', () => {
    const base = signWebhook('s', 'https://a.example/x?y=1', '100', '{}');
    assert.notEqual(signWebhook('t', 'https://a.example/x?y=1', '100', '{}'), base);
    assert.notEqual(signWebhook('s', 'https://a.example/x?y=2', '100', '{}'), base);
    assert.notEqual(signWebhook('s', 'https://a.example/x?y=1', '101', '{}'), base);
    assert.notEqual(signWebhook('s', 'https://a.example/x?y=1', '100', '{ }'), base);
  });
});

describe('verbs/canonical-json', () => {
  it('sorts keys at every depth and adds no whitespace', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x y' } }),
      '{"a":{"c":"x y","d":[3,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('array-index keys sort as strings too, and a __proto__ key is kept', () => {
    assert.equal(canonicalJson({ a: 1, '10': 2, '9': 3, '': 4 }), '{"":4,"10":2,"9":3,"a":1}');
    assert.equal(canonicalJson(JSON.parse('{"b":1,"__proto__":{"x":1}}')), '{"__proto__":{"x":1},"b":1}');
  });

  it('leaves out undefined properties, turns undefined array items into null, honours toJSON', () => {
    assert.equal(
      canonicalJson({ a: undefined, b: [undefined], c: new Date(Date.UTC(2026, 0, 2)) }),
      '{"b":[null],"c":"2026-01-02T00:00:00.000Z"}',
    );
  });

  it('sorts by code point, as sort_keys does, not by UTF-16 unit', () => {
    // U+1F600 (surrogates D83D DE00) sorts after U+FF21 by code point, before it by UTF-16 unit.
    assert.equal(canonicalJson({ '\u{1F600}': 1, '\uFF21': 2 }), '{"\uFF21":2,"\u{1F600}":1}');
  });

  it('parses back to the same value and is a fixed point', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)));
        assert.equal(canonicalJson(JSON.parse(text)), text);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses values JSON cannot carry faithfully', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [Number.NaN, Infinity, 10n, cyclic, undefined]) {
      assert.throws(() => canonicalJson(bad), CanonicalJsonError);
    }
  });
});

describe('verbs and events produce the same webhook bytes and signatures', () => {
  // Both rooms sign webhooks (call-control here, status callbacks there); a receiver verifies both with one
  // routine, so the two must not drift apart.
  const ordinaryKeys = (value: unknown): boolean =>
    Array.isArray(value)
      ? value.every(ordinaryKeys)
      : value === null || typeof value !== 'object'
        ? true
        : Object.entries(value).every(([k, v]) => !/^(0|[1-9][0-9]*)$/.test(k) && k !== '__proto__' && ordinaryKeys(v));

  it('canonicalJson agrees on JSON values with ordinary keys', () => {
    fc.assert(
      fc.property(fc.jsonValue().filter(ordinaryKeys), (value) => {
        assert.equal(canonicalJson(value), events.canonicalJson(value));
      }),
      { numRuns: 300 },
    );
    const call = { To: '+254711000002', From: '+254700000001', customPayload: '{"note":"Chai ☕ na maandazi"}' };
    assert.equal(canonicalJson(call), events.canonicalJson(call));
  });

  // There is one canonicalJson now (events/canonical-json.ts, which writes the text directly): array-index keys
  // ("0", "42") keep code-point order and a "__proto__" key is kept as a key.
  it('canonicalJson keeps array-index and __proto__ keys in order', () => {
    const indexKeys = { '': 1, '0': 0, a: { '10': 1, '9': 2 } };
    assert.equal(canonicalJson(indexKeys), '{"":1,"0":0,"a":{"10":1,"9":2}}');
    assert.equal(events.canonicalJson(indexKeys), canonicalJson(indexKeys));
    const proto = JSON.parse('{"__proto__":{"x":1}}') as unknown;
    assert.equal(canonicalJson(proto), '{"__proto__":{"x":1}}');
    assert.equal(events.canonicalJson(proto), canonicalJson(proto));
  });

  it('signWebhook agrees', () => {
    const body = canonicalJson({ CallSid: 'call_1', Greeting: 'Habari, José — 你好 ☎' });
    assert.equal(
      signWebhook('s3cret', 'https://a.example/x?y=1&z=2', '1763785200', body),
      events.signWebhook('s3cret', 'https://a.example/x?y=1&z=2', '1763785200', body),
    );
  });
});
