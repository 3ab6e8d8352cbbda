/**
 * The RFC 4475 messages that need an answer, sent over real UDP to a user agent: the parser's rejections and
 * the §8.2 checks come back as responses. A `;rport` is added to each top Via so the answer comes back to the
 * test socket (RFC 3581) rather than to the example hosts' port 5060.
 */
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UserAgent } from '../../../sip/stack/index.js';
import { Agents, rawUdp } from './helpers.js';
import { MANIFEST } from './rfc4475-manifest.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dir = path.resolve(repoRoot, 'test', 'fixtures', 'rfc4475');

function withRport(data: Buffer): Buffer {
  const text = data.toString('latin1');
  const m = /^(Via|v)[ \t]*:.*$/im.exec(text);
  if (!m) return data;
  const line = m[0].replace(/\s*$/, '');
  const fixed = /;\s*branch=/i.test(line) ? line.replace(/;(\s*)branch=/i, ';rport;$1branch=') : `${line};rport`;
  return Buffer.from(text.replace(m[0], fixed), 'latin1');
}

describe('RFC 4475 requests answered over UDP', function () {
  this.timeout(20000);
  const agents = new Agents();
  afterEach(() => agents.closeAll());

  const cases = Object.entries(MANIFEST).filter(
    ([, d]) => d.kind === 'answer' || (d.kind === 'reject' && d.status !== 0),
  ) as Array<[string, { kind: 'answer' | 'reject'; status: number }]>;

  for (const [file, d] of cases) {
    it(`${file}: answered ${d.status}`, async () => {
      // A fresh agent each time: unkscm and novelsc share a branch and sent-by, so one agent would rightly
      // treat the second as a retransmission of the first (§17.2.3).
      const ua = await agents.make();
      ua.onRequest('INVITE', (_req, srv) => srv.send(200));
      ua.onRequest('REGISTER', (_req, srv) => srv.send(200));
      const reply = await rawUdp(ua.address('UDP')!.port, withRport(readFileSync(path.join(dir, file))));
      assert.match(reply, new RegExp(`^SIP/2.0 ${d.status} `));
      if (d.status === 420) assert.match(reply, /\r\nUnsupported: nothingSupportsThis/);
    });
  }

  it('a request with rport gets rport=<source port> and received= in the Via of its response (RFC 3581 §4)', async () => {
    const ua = await agents.make();
    const reply = await rawUdp(
      ua.address('UDP')!.port,
      'OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP client.invalid:9999;rport;branch=z9hG4bKrp1\r\n' +
        'From: <sip:x@client.invalid>;tag=1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: rp1\r\nCSeq: 1 OPTIONS\r\n' +
        'Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n',
    );
    assert.match(reply, /^SIP\/2.0 200 /);
    assert.match(reply, /Via: SIP\/2.0\/UDP client.invalid:9999;rport=\d+;branch=z9hG4bKrp1;received=127.0.0.1\r\n/);
  });

  it('admitRequest sees every request first; a refused one is dropped without any answer', async () => {
    const ua = new UserAgent({ admitRequest: (req) => req.callId !== 'refuse-me' });
    agents.list.push(ua);
    await ua.listen({ udp: { host: '127.0.0.1', port: 0 } });
    const options = (callId: string) =>
      `OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};rport;branch=z9hG4bK${callId}\r\n` +
      `From: <sip:x@127.0.0.1>;tag=1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: ${callId}\r\nCSeq: 1 OPTIONS\r\n` +
      'Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n';
    assert.match(await rawUdp(ua.address('UDP')!.port, options('let-me-in')), /^SIP\/2.0 200 /);
    await assert.rejects(rawUdp(ua.address('UDP')!.port, options('refuse-me'), 400), /no answer/);
  });

  it('a 2xx to an INVITE copies the Record-Route and carries our Contact (§12.1.1)', async () => {
    const ua = await agents.make();
    ua.onRequest('INVITE', (req) => void ua.createUAS(req, { localSdp: 'v=0\r\n' }).catch(() => undefined));
    const reply = await rawUdp(
      ua.address('UDP')!.port,
      'INVITE sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};rport;branch=z9hG4bKrr1\r\n' +
        'Record-Route: <sip:p1.example;lr>, <sip:p2.example;lr>\r\n' +
        'From: <sip:x@127.0.0.1>;tag=1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: rr1\r\nCSeq: 1 INVITE\r\n' +
        'Contact: <sip:x@127.0.0.1:{port}>\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n',
    );
    assert.match(reply, /^SIP\/2.0 200 /);
    assert.match(reply, /Record-Route: <sip:p1.example;lr>\r\nRecord-Route: <sip:p2.example;lr>\r\n/);
    assert.match(reply, /Contact: <sip:127.0.0.1:\d+>/);
  });
});
