import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bearerChallenge,
  DigestClient,
  DigestServer,
  parseMessage,
  parseUri,
  SipRequest,
  SipResponse,
  verifyBearer,
  createResponse,
} from '../../../sip/stack/index.js';
import { digestResponse } from '../../../sip/stack/auth/digest.js';

function register(extra = ''): SipRequest {
  const raw =
    'REGISTER sip:simu.test SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bKr1\r\n' +
    'From: <sip:alice@simu.test>;tag=1\r\nTo: <sip:alice@simu.test>\r\nCall-ID: r1\r\nCSeq: 1 REGISTER\r\n' +
    `Max-Forwards: 70\r\n${extra}Content-Length: 0\r\n\r\n`;
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok && r.message instanceof SipRequest);
  return r.message;
}

function challenged(server: DigestServer, req: SipRequest, stale = false): SipResponse {
  const res = createResponse(req, 401);
  for (const [name, values] of Object.entries(server.challenge({ stale })))
    for (const v of values) res.headers.append(name, v);
  return res;
}

const lookup = (u: string) => (u === 'alice' ? 'secret' : undefined);

describe('digest authentication (RFC 3261 §22, RFC 7616, RFC 8760)', () => {
  it('RFC 8760 §2.4: the challenge offers SHA-256 first, then MD5, both with qop=auth', () => {
    const h = new DigestServer({ realm: 'simu.test' }).challenge();
    const v = h['WWW-Authenticate'];
    assert.equal(v.length, 2);
    assert.match(v[0], /algorithm=SHA-256/);
    assert.match(v[1], /algorithm=MD5/);
    assert.ok(v.every((x) => x.includes('qop="auth"')));
  });

  it('RFC 7616 §3.9.1: the request-digest reproduces the RFC example for MD5 and SHA-256', () => {
    const example = {
      username: 'Mufasa',
      realm: 'http-auth@example.org',
      password: 'Circle of Life',
      method: 'GET',
      uri: '/dir/index.html',
      nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
      qop: 'auth',
      nc: '00000001',
      cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
    };
    assert.equal(digestResponse({ ...example, algorithm: 'MD5' }), '8ca523f5e9506fed4657c9700eebdbec');
    assert.equal(
      digestResponse({ ...example, algorithm: 'SHA-256' }),
      '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
    );
  });

  for (const algorithms of [['SHA-256', 'MD5'], ['MD5']] as const) {
    it(`our client answers a ${algorithms.join('+')} challenge and the server accepts it once (single-use nonce)`, async () => {
      const server = new DigestServer({ realm: 'simu.test', algorithms: [...algorithms] });
      const req = register();
      assert.deepEqual(await server.verify(req, lookup), { ok: false, stale: false, reason: 'missing' });
      const res = challenged(server, req);
      const retry = req.clone();
      assert.ok(new DigestClient({ username: 'alice', password: 'secret' }).authorize(retry, res));
      const v = await server.verify(retry, lookup);
      assert.deepEqual(v, { ok: true, username: 'alice', algorithm: algorithms[0] });
      // Replaying the same credentials: the digest is right but the nonce is spent, so stale=true.
      assert.deepEqual(await server.verify(retry, lookup), { ok: false, stale: true, reason: 'stale' });
    });
  }

  it('an expired nonce with a correct digest is stale; a wrong password is not', async () => {
    let now = 1_000_000;
    const server = new DigestServer({ realm: 'simu.test', nonceTtlMs: 30_000, clock: { now: () => now } });
    const req = register();
    const res = challenged(server, req);
    const good = req.clone();
    new DigestClient({ username: 'alice', password: 'secret' }).authorize(good, res);
    const bad = req.clone();
    new DigestClient({ username: 'alice', password: 'nope' }).authorize(bad, res);
    now += 31_000;
    assert.deepEqual(await server.verify(good, lookup), { ok: false, stale: true, reason: 'stale' });
    assert.deepEqual(await server.verify(bad, lookup), { ok: false, stale: false, reason: 'wrong' });
  });

  it('RFC 2617 §3.2.2.5: a digest whose uri is not the Request-URI is refused as uri-mismatch, before any lookup', async () => {
    const server = new DigestServer({ realm: 'simu.test' });
    const req = register();
    const res = challenged(server, req);
    const good = req.clone();
    assert.ok(new DigestClient({ username: 'alice', password: 'secret' }).authorize(good, res));
    // The same credentials (right password, fresh nonce) on a request for another resource.
    for (const target of ['sip:other.test', 'sip:simu.test:5070', 'sip:bob@simu.test', 'sips:simu.test']) {
      const moved = good.clone();
      moved.uri = parseUri(target)!;
      let looked = 0;
      const v = await server.verify(moved, (u) => (looked++, lookup(u)));
      assert.deepEqual(v, { ok: false, stale: false, reason: 'uri-mismatch' }, target);
      assert.equal(looked, 0, 'no password lookup for a mismatched uri');
    }
    // Differences the URI parser normalises (scheme and host case) are the same URI.
    const cased = good.clone();
    cased.headers.set(
      'authorization',
      good.headers.get('authorization')!.replace('uri="sip:simu.test"', 'uri="SIP:Simu.Test"'),
    );
    // It passes the uri check (the digest, computed over the other spelling, is then simply wrong).
    assert.deepEqual(await server.verify(cased, lookup), { ok: false, stale: false, reason: 'wrong' }, 'same URI');
    // URI parameters name no other resource: SIPp signs `sip:host:port` for a Request-URI with `;transport=UDP`.
    // (The nonce is single-use: this is the request that uses it.)
    const withParams = good.clone();
    withParams.uri = parseUri('sip:simu.test;transport=udp')!;
    assert.deepEqual(await server.verify(withParams, lookup), { ok: true, username: 'alice', algorithm: 'SHA-256' });
  });

  it('a digest-uri naming this server itself (as SIPp signs it) is accepted; another server is not', async () => {
    const server = new DigestServer({ realm: 'simu.test' });
    const signedFor = async (local: string) => {
      const req = register();
      req.uri = parseUri('sip:10.0.0.5:5060')!; // what SIPp puts in the digest: the server's address
      const good = req.clone();
      assert.ok(new DigestClient({ username: 'alice', password: 'secret' }).authorize(good, challenged(server, req)));
      good.uri = parseUri('sip:acct.simu.test')!; // the Request-URI names the account's domain
      good.source = {
        transport: 'UDP',
        address: '10.0.0.9',
        port: 5062,
        flowId: 'f',
        localAddress: local,
        localPort: 5060,
      };
      return server.verify(good, lookup);
    };
    assert.deepEqual(await signedFor('10.0.0.5'), { ok: true, username: 'alice', algorithm: 'SHA-256' });
    assert.deepEqual(await signedFor('10.0.0.6'), { ok: false, stale: false, reason: 'uri-mismatch' });
  });

  /** A REGISTER for `sip:acct.simu.test` signed over `digestUri`, arrived on `local`:5060. */
  async function signedOver(server: DigestServer, digestUri: string, local: string) {
    const req = register();
    req.uri = parseUri(digestUri)!;
    const good = req.clone();
    assert.ok(new DigestClient({ username: 'alice', password: 'secret' }).authorize(good, challenged(server, req)));
    good.uri = parseUri('sip:acct.simu.test')!;
    good.source = {
      transport: 'UDP',
      address: '10.0.0.9',
      port: 5062,
      flowId: 'f',
      localAddress: local,
      localPort: 5060,
    };
    return server.verify(good, lookup);
  }

  it('a socket bound to every address (0.0.0.0, ::) names no server: its own unspecified address is no match', async () => {
    const server = new DigestServer({ realm: 'simu.test' });
    for (const [uri, local] of [
      ['sip:0.0.0.0:5060', '0.0.0.0'],
      ['sip:[::]:5060', '::'],
    ]) {
      assert.deepEqual(await signedOver(server, uri, local), { ok: false, stale: false, reason: 'uri-mismatch' }, uri);
    }
    // An IPv6 address the socket reports without brackets is the URI's bracketed host.
    assert.equal((await signedOver(server, 'sip:[2001:db8::5]:5060', '2001:db8::5')).ok, true);
  });

  it('namesServer decides which user-less digest-uris name the server; a user or another scheme never does', async () => {
    const asked: string[] = [];
    const server = new DigestServer({
      realm: 'simu.test',
      namesServer: (u) => (asked.push(u.host), u.host === '127.0.0.1' || u.host === 'switch.test'),
    });
    // Listening on 0.0.0.0: the address SIPp sent to, and the switch's name, both name it.
    assert.equal((await signedOver(server, 'sip:127.0.0.1:5060', '0.0.0.0')).ok, true);
    assert.equal((await signedOver(server, 'sip:switch.test', '0.0.0.0')).ok, true);
    for (const uri of ['sip:other.test', 'sip:bob@127.0.0.1:5060', 'tel:+254700000000']) {
      assert.deepEqual(
        await signedOver(server, uri, '0.0.0.0'),
        { ok: false, stale: false, reason: 'uri-mismatch' },
        uri,
      );
    }
    assert.deepEqual(asked, ['127.0.0.1', 'switch.test', 'other.test'], 'asked only about user-less SIP URIs');
  });

  it('a nonce we did not issue is refused', async () => {
    const server = new DigestServer({ realm: 'simu.test' });
    const other = new DigestServer({ realm: 'simu.test' });
    const req = register();
    const retry = req.clone();
    new DigestClient({ username: 'alice', password: 'secret' }).authorize(retry, challenged(other, req));
    assert.equal((await server.verify(retry, lookup)).ok, false);
  });

  it('RFC 4475 regaut01: an unknown scheme counts as no credentials, so the answer is a challenge', async () => {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const file = path.resolve(here, '..', '..', 'fixtures', 'rfc4475', 'application', 'regaut01.dat');
    const r = parseMessage(readFileSync(file));
    assert.ok(r.ok && r.message instanceof SipRequest);
    const v = await new DigestServer({ realm: 'example.com' }).verify(r.message, lookup);
    assert.deepEqual(v, { ok: false, stale: false, reason: 'missing' });
  });

  it('a 407 is answered with Proxy-Authorization', () => {
    const server = new DigestServer({ realm: 'trunk', proxy: true });
    const req = register();
    const res = createResponse(req, 407);
    for (const v of server.challenge()['Proxy-Authenticate']) res.headers.append('Proxy-Authenticate', v);
    const retry = req.clone();
    new DigestClient({ username: 'u', password: 'p' }).authorize(retry, res);
    assert.ok(retry.headers.has('proxy-authorization'));
  });
});

describe('bearer tokens (RFC 8898)', () => {
  it('hands the token to the application verifier and builds the challenge', async () => {
    const req = register('Authorization: Bearer abc.def-ghi\r\n');
    assert.equal(
      await verifyBearer(req, (t) => (t === 'abc.def-ghi' ? { sub: 'alice' } : undefined)).then((x) => x?.sub),
      'alice',
    );
    assert.equal(await verifyBearer(register(), () => 'never'), undefined);
    assert.equal(bearerChallenge('simu.test'), 'Bearer realm="simu.test"');
  });
});
