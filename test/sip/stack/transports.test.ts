import { strict as assert } from 'node:assert';
import { X509Certificate } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import { WebSocket } from 'ws';
import { UserAgent, SipTransportError, type Dialog } from '../../../sip/stack/index.js';
import { Agents, SDP_A, SDP_B, selfSignedCert, uriOf, waitFor } from './helpers.js';
import { eventually, openTcpConnections } from '../../support/wait.js';

const OPTIONS = (via: string) =>
  `OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/${via} 127.0.0.1:9;branch=z9hG4bK${Math.random().toString(36).slice(2)}\r\n` +
  'From: <sip:x@127.0.0.1>;tag=1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: t1\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n';

describe('transports (RFC 3261 §18, RFC 7118, RFC 5626 keep-alive)', function () {
  this.timeout(15000);
  const agents = new Agents();
  const cert = selfSignedCert();
  const opened: Array<{ close(): void }> = [];
  afterEach(async () => {
    for (const o of opened.splice(0)) o.close();
    await agents.closeAll();
  });

  async function secureAgent(): Promise<UserAgent> {
    const ua = new UserAgent({ tls: { ca: cert.cert } });
    agents.list.push(ua);
    await ua.listen({
      udp: { host: '127.0.0.1', port: 0 },
      tls: { host: '127.0.0.1', port: 0, ...cert },
      ws: { host: '127.0.0.1', port: 0 },
      wss: { host: '127.0.0.1', port: 0, ...cert },
    });
    return ua;
  }

  it('TLS: a call with the certificate from config, verified against it as CA', async () => {
    const [a, b] = [await secureAgent(), await secureAgent()];
    const uas = waitFor<Dialog>((done) =>
      a.onRequest('INVITE', async (req) => done(await a.createUAS(req, { localSdp: SDP_B }))),
    );
    const t = a.address('TLS')!;
    const uac = await b.createUAC(`sip:bob@127.0.0.1:${t.port};transport=tls`, { localSdp: SDP_A });
    assert.equal((await uas).transport, 'TLS');
    assert.equal(uac.remoteSdp, SDP_B);
    await uac.bye();
  });

  it('TLS and WSS: a renewed certificate is presented to connections accepted after it', async () => {
    const a = await secureAgent();
    const presented = (port: number) =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
          resolve(s.getPeerCertificate().fingerprint256);
          s.destroy();
        });
        s.once('error', reject);
      });
    const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
    const renewed = selfSignedCert();
    for (const name of ['TLS', 'WSS'] as const)
      assert.equal(await presented(a.address(name)!.port), fingerprint(cert.cert));
    a.setCertificate(renewed);
    for (const name of ['TLS', 'WSS'] as const)
      assert.equal(await presented(a.address(name)!.port), fingerprint(renewed.cert), name);
  });

  for (const scheme of ['ws', 'wss'] as const) {
    it(`${scheme.toUpperCase()}: one message per frame with subprotocol sip; the response comes back on the socket`, async () => {
      const a = await secureAgent();
      const port = a.address(scheme === 'ws' ? 'WS' : 'WSS')!.port;
      const ws = new WebSocket(`${scheme}://127.0.0.1:${port}`, 'sip', { ca: cert.cert });
      opened.push(ws);
      await new Promise((r, j) => ws.once('open', r).once('error', j));
      assert.equal(ws.protocol, 'sip');
      const reply = waitFor<string>((done) => ws.once('message', (d) => done(String(d))));
      ws.send(OPTIONS(scheme.toUpperCase()));
      assert.match(await reply, /^SIP\/2.0 200 /);
    });
  }

  it('WS: a connection without the sip subprotocol is refused (RFC 7118 §4.1)', async () => {
    const a = await secureAgent();
    const ws = new WebSocket(`ws://127.0.0.1:${a.address('WS')!.port}`, 'chat');
    opened.push(ws);
    await assert.rejects(new Promise((r, j) => ws.once('open', r).once('error', j)));
  });

  it('WS: a peer that stops answering pings is dropped and its flow reported closed; a live one stays', async () => {
    const a = new UserAgent();
    agents.list.push(a);
    await a.listen({ ws: { host: '127.0.0.1', port: 0 }, wsPingMs: 100 });
    const closed: string[] = [];
    a.onFlowClosed((id) => closed.push(id));
    const url = `ws://127.0.0.1:${a.address('WS')!.port}`;
    const live = new WebSocket(url, 'sip');
    const dead = new WebSocket(url, 'sip');
    opened.push(live, dead);
    await Promise.all([live, dead].map((ws) => new Promise((r) => ws.once('open', r))));
    // A vanished browser: its socket is never read again, so no pong comes back.
    (dead as unknown as { _socket: net.Socket })._socket.pause();
    await waitFor<void>((done) => {
      const check = () => (closed.length > 0 ? done() : setTimeout(check, 20));
      check();
    }, 2000);
    await new Promise((r) => setTimeout(r, 300)); // three more rounds of pings
    assert.equal(closed.length, 1, 'only the silent peer is dropped');
    assert.equal(live.readyState, WebSocket.OPEN);
  });

  it('WS: a call from a browser-like client; the callee BYE goes back over the same WebSocket', async () => {
    const a = await secureAgent();
    const ws = new WebSocket(`ws://127.0.0.1:${a.address('WS')!.port}`, 'sip');
    opened.push(ws);
    await new Promise((r) => ws.once('open', r));
    const frames: string[] = [];
    ws.on('message', (d) => frames.push(String(d)));
    a.onRequest('INVITE', async (req) => {
      const d = await a.createUAS(req, { localSdp: SDP_B });
      await d.bye();
    });
    const invite =
      'INVITE sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/WS df7jal23ls0d.invalid;branch=z9hG4bKws1\r\n' +
      'From: <sip:alice@example.com>;tag=w1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: ws-call\r\nCSeq: 1 INVITE\r\n' +
      'Max-Forwards: 70\r\nContact: <sip:alice@df7jal23ls0d.invalid;transport=ws>\r\nContent-Type: application/sdp\r\n' +
      `Content-Length: ${SDP_A.length}\r\n\r\n${SDP_A}`;
    ws.send(invite);
    await waitFor<void>((done) => {
      const check = () => (frames.some((f) => f.startsWith('SIP/2.0 200')) ? done() : setTimeout(check, 10));
      check();
    });
    const ok = frames.find((f) => f.startsWith('SIP/2.0 200'))!;
    const toTag = /To: .*;tag=([^\s;]+)/.exec(ok)![1];
    ws.send(
      `ACK sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/WS df7jal23ls0d.invalid;branch=z9hG4bKws2\r\n` +
        `From: <sip:alice@example.com>;tag=w1\r\nTo: <sip:bob@127.0.0.1>;tag=${toTag}\r\nCall-ID: ws-call\r\n` +
        'CSeq: 1 ACK\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n',
    );
    await waitFor<void>((done) => {
      const check = () => (frames.some((f) => f.startsWith('BYE ')) ? done() : setTimeout(check, 10));
      check();
    });
  });

  it('TCP: CRLFCRLF ping is answered with a CRLF pong; split messages are reassembled', async () => {
    const a = await agents.make();
    const sock = net.connect(a.address('TCP')!.port, '127.0.0.1');
    opened.push({ close: () => sock.destroy() });
    await new Promise((r) => sock.once('connect', r));
    const got: Buffer[] = [];
    sock.on('data', (d) => got.push(d));
    sock.write('\r\n\r\n');
    const msg = OPTIONS('TCP');
    sock.write(msg.slice(0, 40));
    await new Promise((r) => setTimeout(r, 30));
    sock.write(msg.slice(40));
    await waitFor<void>((done) => {
      const check = () => (Buffer.concat(got).toString().includes('200 OK') ? done() : setTimeout(check, 10));
      check();
    });
    assert.ok(Buffer.concat(got).toString().startsWith('\r\nSIP/2.0 200 OK'));
  });

  it('TCP: a message over the size limit closes the connection (framing reports too large)', async () => {
    const ua = new UserAgent({ limits: { maxMessageBytes: 1000 } });
    agents.list.push(ua);
    await ua.listen({ tcp: { host: '127.0.0.1', port: 0 } });
    const sock = net.connect(ua.address('TCP')!.port, '127.0.0.1');
    opened.push({ close: () => sock.destroy() });
    await new Promise((r) => sock.once('connect', r));
    const closed = waitFor<boolean>((done) => sock.once('close', () => done(true)));
    sock.write(OPTIONS('TCP').replace('Content-Length: 0', 'Content-Length: 5000'));
    assert.equal(await closed, true);
  });

  it('TCP: an in-dialog request after the peer went away rejects with SipTransportError', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const uasP = waitFor<Dialog>((done) =>
      a.onRequest('INVITE', async (req) => done(await a.createUAS(req, { localSdp: SDP_B }))),
    );
    await b.createUAC(uriOf(a, 'TCP'), { localSdp: SDP_A });
    const uas = await uasP;
    await b.close();
    // a has closed its end of the connection b went away on (not a fixed sleep: on a busy box that takes longer).
    await eventually(() => openTcpConnections(a.address('TCP')!.port) === 0, "a's end of the connection closed");
    await assert.rejects(uas.request('INFO'), (e: unknown) => e instanceof SipTransportError);
  });
});
