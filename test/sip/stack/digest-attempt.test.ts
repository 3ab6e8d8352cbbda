import { strict as assert } from 'node:assert';
import {
  DigestClient,
  DigestServer,
  createResponse,
  parseMessage,
  SipRequest,
  type SipResponse,
} from '../../../sip/stack/index.js';

function register(callId = 'r1'): SipRequest {
  const raw =
    'REGISTER sip:simu.test SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bKr1\r\n' +
    `From: <sip:alice@simu.test>;tag=1\r\nTo: <sip:alice@simu.test>\r\nCall-ID: ${callId}\r\nCSeq: 1 REGISTER\r\n` +
    'Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n';
  const r = parseMessage(Buffer.from(raw));
  assert.ok(r.ok && r.message instanceof SipRequest);
  return r.message;
}

function challenged(server: DigestServer, req: SipRequest): SipResponse {
  const res = createResponse(req, 401);
  for (const [name, values] of Object.entries(server.challenge())) for (const v of values) res.headers.append(name, v);
  return res;
}

/** A REGISTER answering a fresh challenge of `server` with `password`. */
function answered(server: DigestServer, password: string, callId?: string): SipRequest {
  const req = register(callId);
  const retry = req.clone();
  assert.ok(new DigestClient({ username: 'alice', password }).authorize(retry, challenged(server, req)));
  return retry;
}

const nonceOf = (req: SipRequest) => /nonce="([^"]+)"/.exec(req.headers.get('authorization')!)![1]!;

describe('DigestServer: credentials read once, tried against several passwords (parse, check, settle)', () => {
  it('only the password the digest was made with checks; settle accepts the nonce once, then calls it stale', () => {
    const server = new DigestServer({ realm: 'simu.test', algorithms: ['MD5'] });
    const req = answered(server, 'right');
    const a = server.parse(req);
    assert.ok(a.ok);
    assert.equal(a.username, 'alice');
    assert.equal(server.check(a, 'wrong'), false);
    assert.equal(server.check(a, 'Right'), false);
    assert.equal(server.check(a, 'right'), true);
    assert.deepEqual(server.settle(a), { ok: true, username: 'alice', algorithm: 'MD5' });
    // The same request again (a replay): still the right digest, but its nonce is spent.
    const again = server.parse(req);
    assert.ok(again.ok);
    assert.equal(server.check(again, 'right'), true);
    assert.deepEqual(server.settle(again), { ok: false, stale: true, reason: 'stale' });
  });

  it('a nonce past its lifetime is stale; a nonce altered or from another server is refused before any password', () => {
    let now = 5_000_000;
    const server = new DigestServer({ realm: 'simu.test', nonceTtlMs: 30_000, clock: { now: () => now } });
    const old = server.parse(answered(server, 'right'));
    assert.ok(old.ok);
    now += 30_001;
    assert.equal(server.check(old, 'right'), true);
    assert.deepEqual(server.settle(old), { ok: false, stale: true, reason: 'stale' });

    const req = answered(server, 'right');
    const nonce = nonceOf(req);
    const [issued, counter, tag] = nonce.split('.');
    // Another counter (or issue time) under the same tag: not a nonce this server issued.
    for (const forged of [
      `${issued}.${(parseInt(counter!, 36) + 1).toString(36)}.${tag}`,
      `${(parseInt(issued!, 36) + 60_000).toString(36)}.${counter}.${tag}`,
    ]) {
      const f = req.clone();
      f.headers.set('authorization', req.headers.get('authorization')!.replace(nonce, forged));
      assert.deepEqual(server.parse(f), { ok: false, stale: false, reason: 'wrong' }, forged);
    }
    const other = new DigestServer({ realm: 'simu.test', clock: { now: () => now } });
    assert.deepEqual(other.parse(req), { ok: false, stale: false, reason: 'wrong' });
  });

  it('every challenge carries a nonce of its own, stamped with its issue time', () => {
    const now = 7_000_000;
    const server = new DigestServer({ realm: 'simu.test', clock: { now: () => now } });
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const v = server.challenge()['WWW-Authenticate']![0]!;
      const nonce = /nonce="([^"]+)"/.exec(v)![1]!;
      assert.equal(parseInt(nonce.split('.')[0]!, 36), now);
      seen.add(nonce);
    }
    assert.equal(seen.size, 20_000);
  });

  it('verify() still answers as parse, check and settle do together', async () => {
    const server = new DigestServer({ realm: 'simu.test' });
    const lookup = (u: string) => (u === 'alice' ? 'right' : undefined);
    assert.deepEqual(await server.verify(register(), lookup), { ok: false, stale: false, reason: 'missing' });
    assert.deepEqual(await server.verify(answered(server, 'nope'), lookup), {
      ok: false,
      stale: false,
      reason: 'wrong',
    });
    const good = answered(server, 'right');
    assert.deepEqual(await server.verify(good, lookup), { ok: true, username: 'alice', algorithm: 'SHA-256' });
    assert.deepEqual(await server.verify(good, lookup), { ok: false, stale: true, reason: 'stale' });
  });
});
