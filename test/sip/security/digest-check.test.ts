import assert from 'node:assert/strict';
import { checkDigestAuth, expectedDigestResponse, type DigestCredentials } from '../../../sip/security/index.js';
import { makeGate } from './helpers.js';

const base: Omit<DigestCredentials, 'response'> = {
  username: '101',
  realm: 'simu',
  nonce: 'n0nce',
  uri: 'sip:simu',
  method: 'REGISTER',
  algorithm: 'SHA-256',
  qop: 'auth',
  nc: '00000001',
  cnonce: 'c',
};
const TOKEN = 'phone-token-of-user-101';
const good = { ...base, response: expectedDigestResponse({ ...base, response: '' }, TOKEN) };
const bad = { ...base, response: expectedDigestResponse({ ...base, response: '' }, 'guess') };

describe('sip/security: checkDigestAuth, the registrar recipe in one call', () => {
  it('accepts the right token, refuses a wrong one and an unknown user alike, and reports both to the gate', () => {
    const { gate } = makeGate();
    const who = { source: '192.0.2.60', account: 'acc', user: '101' };
    assert.equal(checkDigestAuth(gate, { ...who, credentials: good, secret: TOKEN }), true);
    assert.equal(checkDigestAuth(gate, { ...who, credentials: bad, secret: TOKEN }), false);
    assert.equal(checkDigestAuth(gate, { ...who, user: 'nobody', credentials: good, secret: undefined }), false);
    const st = gate.stats();
    assert.equal(st.authSuccesses, 1);
    assert.equal(st.authFailures, 2);
  });

  it('refuses even the right token from a new address while the user is locked, but not from its registered phone', () => {
    const { gate } = makeGate({
      settings: { auth: { maxFailuresPerUser: 3 } },
      registrations: { addressesFor: () => ['10.0.0.5'] },
    });
    for (let i = 0; i < 4; i++) {
      checkDigestAuth(gate, {
        source: `198.51.100.${i}`,
        account: 'acc',
        user: '101',
        credentials: bad,
        secret: TOKEN,
      });
    }
    const stranger = { source: '198.51.100.99', account: 'acc', user: '101', credentials: good, secret: TOKEN };
    assert.equal(checkDigestAuth(gate, stranger), false);
    assert.equal(checkDigestAuth(gate, { ...stranger, source: '10.0.0.5' }), true);
  });
});
