import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  equaliseAuthFailure,
  expectedDigestResponse,
  verifyDigestResponse,
  type DigestCredentials,
} from '../../../sip/security/index.js';

// RFC 2617 §3.5 example.
const rfc2617: DigestCredentials = {
  username: 'Mufasa',
  realm: 'testrealm@host.com',
  nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
  uri: '/dir/index.html',
  qop: 'auth',
  nc: '00000001',
  cnonce: '0a4f113b',
  method: 'GET',
  response: '6629fae49393a05397450978507c4ef1',
};

// RFC 7616 §3.9.1 example, SHA-256.
const rfc7616: DigestCredentials = {
  username: 'Mufasa',
  realm: 'http-auth@example.org',
  nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
  uri: '/dir/index.html',
  qop: 'auth',
  nc: '00000001',
  cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  method: 'GET',
  algorithm: 'SHA-256',
  response: '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
};

function medianNs(samples: bigint[]): number {
  const s = samples.map(Number).sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

describe('sip/security: digest checks that do not reveal whether a user exists', () => {
  it('verifies the RFC 2617 and RFC 7616 example responses, and refuses a wrong password', () => {
    assert.equal(verifyDigestResponse(rfc2617, 'Circle Of Life'), true);
    assert.equal(verifyDigestResponse(rfc7616, 'Circle of Life'), true);
    assert.equal(
      verifyDigestResponse({ ...rfc7616, response: rfc7616.response.toUpperCase() }, 'Circle of Life'),
      true,
    );
    assert.equal(verifyDigestResponse(rfc2617, 'circle of life'), false);
    assert.equal(verifyDigestResponse({ ...rfc2617, response: 'abc' }, 'Circle Of Life'), false);
  });

  it('accepts a stored HA1 in place of the password', () => {
    const ha1 = createHash('md5').update('Mufasa:testrealm@host.com:Circle Of Life').digest('hex');
    assert.equal(verifyDigestResponse(rfc2617, { ha1 }), true);
  });

  it('computes RFC 2069 responses (no qop) and auth-int', () => {
    const c = { ...rfc2617, qop: undefined, nc: undefined, cnonce: undefined, method: 'REGISTER', uri: 'sip:x' };
    const r = expectedDigestResponse(c, 'pw');
    assert.equal(verifyDigestResponse({ ...c, response: r }, 'pw'), true);
    const i = { ...rfc2617, qop: 'auth-int', body: 'v=0\r\n' };
    assert.notEqual(expectedDigestResponse(i, 'pw'), expectedDigestResponse({ ...i, body: 'v=1\r\n' }, 'pw'));
  });

  it('an unknown user is always refused, even when the response is computed with an empty password', () => {
    const c = { ...rfc2617, response: expectedDigestResponse(rfc2617, '') };
    assert.equal(verifyDigestResponse(c, undefined), false);
    assert.equal(equaliseAuthFailure(c), false);
  });

  it('an unknown user and a wrong password take the same time; an early return would not (control)', function () {
    this.timeout(20_000);
    const c = { ...rfc7616, username: 'nobody', response: '0'.repeat(64) };
    const n = 3000;
    const unknown: bigint[] = [];
    const wrong: bigint[] = [];
    const naive: bigint[] = [];
    // What a registrar that returns early for an unknown user would spend.
    const naiveCheck = (secret: string | undefined) => (secret === undefined ? false : verifyDigestResponse(c, secret));
    for (let i = 0; i < 200; i++) verifyDigestResponse(c, 'warm-up');
    for (let i = 0; i < n; i++) {
      let t = process.hrtime.bigint();
      verifyDigestResponse(c, undefined);
      unknown.push(process.hrtime.bigint() - t);
      t = process.hrtime.bigint();
      verifyDigestResponse(c, 'a-wrong-token-of-the-usual-length-43-chars-');
      wrong.push(process.hrtime.bigint() - t);
      t = process.hrtime.bigint();
      naiveCheck(undefined);
      naive.push(process.hrtime.bigint() - t);
    }
    const mu = medianNs(unknown);
    const mw = medianNs(wrong);
    const mn = medianNs(naive);
    const ratio = mu / mw;
    assert.ok(ratio > 0.75 && ratio < 1.33, `unknown ${mu} ns vs wrong ${mw} ns (ratio ${ratio.toFixed(2)})`);
    assert.ok(mn < mw / 3, `the control must be distinguishable: early return ${mn} ns vs ${mw} ns`);
  });
});
