import assert from 'node:assert/strict';
import {
  createResponse,
  DigestClient,
  DigestServer,
  parseMessage,
  SipRequest,
  type SipResponse,
} from '../../../sip/stack/index.js';
import { checkDigestAuth, withDummySecret } from '../../../sip/security/index.js';
import { makeGate } from './helpers.js';

/** The registrar's path as it will be built on the stack's DigestServer, with the security room's wrapper. */
function register(user: string): SipRequest {
  const raw =
    `REGISTER sip:simu.test SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.70:5062;branch=z9hG4bK${user}\r\n` +
    `From: <sip:${user}@simu.test>;tag=1\r\nTo: <sip:${user}@simu.test>\r\nCall-ID: r-${user}\r\n` +
    'CSeq: 1 REGISTER\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n';
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok && r.message instanceof SipRequest);
  return r.message;
}

function authorised(server: DigestServer, user: string, password: string): SipRequest {
  const req = register(user);
  const res: SipResponse = createResponse(req, 401);
  for (const [name, values] of Object.entries(server.challenge())) for (const v of values) res.headers.append(name, v);
  const retry = req.clone();
  assert.ok(new DigestClient({ username: user, password }).authorize(retry, res));
  return retry;
}

const tokens = new Map([['101', 'token-of-101']]);
const lookup = (username: string) => tokens.get(username);

describe('sip/security with the stack’s DigestServer: no enumeration', () => {
  it('without the wrapper an unknown user is told apart; with it, unknown and wrong look the same', async () => {
    const server = new DigestServer({ realm: 'simu.test' });
    const bare = await server.verify(authorised(server, 'nobody', 'x'), lookup);
    assert.equal(bare.ok === false && bare.reason, 'unknown-user', 'the control: the bare lookup leaks');

    const equalised = withDummySecret(lookup);
    const unknown = await server.verify(authorised(server, 'nobody', 'x'), equalised);
    const wrong = await server.verify(authorised(server, '101', 'x'), equalised);
    assert.deepEqual(unknown, { ok: false, stale: false, reason: 'wrong' });
    assert.deepEqual(wrong, unknown);
    const right = await server.verify(authorised(server, '101', 'token-of-101'), equalised);
    assert.equal(right.ok, true);
  });

  it('checkDigestAuth and the gate see the same outcomes as the stack', () => {
    const { gate } = makeGate({ settings: { auth: { maxFailuresPerSource: 2 } } });
    const creds = {
      username: 'nobody',
      realm: 'simu.test',
      nonce: 'n',
      uri: 'sip:simu.test',
      method: 'REGISTER',
      response: '0'.repeat(32),
    };
    for (let i = 0; i < 2; i++)
      assert.equal(
        checkDigestAuth(gate, { source: '192.0.2.70', user: 'nobody', credentials: creds, secret: undefined }),
        false,
      );
    assert.equal(gate.bans().length, 0);
    checkDigestAuth(gate, { source: '192.0.2.70', user: 'nobody', credentials: creds, secret: undefined });
    assert.equal(gate.bans()[0]?.reason, 'auth-failures');
  });
});
