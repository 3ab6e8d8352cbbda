import { strict as assert } from 'node:assert';
import {
  DigestServer,
  SipCanceledError,
  SipResponseError,
  SipTransportError,
  type Dialog,
  type SipRequest,
} from '../../../sip/stack/index.js';
import { nextPort } from '../../support/ports.js';
import { Agents, rawUdp, SDP_A, SDP_B, uriOf, waitFor } from './helpers.js';

describe('user agent over real sockets (loopback)', function () {
  this.timeout(10000);
  const agents = new Agents();
  afterEach(() => agents.closeAll());

  it('answers OPTIONS with 200 and Allow by default (§11.2)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const res = await b.request(uriOf(a), { method: 'OPTIONS' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('allow') ?? '', /INVITE/);
  });

  for (const transport of ['UDP', 'TCP'] as const) {
    it(`${transport}: a call is answered, carries INFO in the dialog and ends with the caller's BYE`, async () => {
      const [a, b] = [await agents.make(), await agents.make()];
      const uasP = waitFor<Dialog>((done) =>
        a.onRequest('INVITE', async (req, srv) => {
          assert.equal(req.source?.transport, transport);
          srv.send(180);
          done(await a.createUAS(req, { localSdp: SDP_B }));
        }),
      );
      const ringing: number[] = [];
      const uac = await b.createUAC(uriOf(a, transport), {
        localSdp: SDP_A,
        onProvisional: (r) => ringing.push(r.status),
      });
      const uas = await uasP;
      assert.deepEqual(ringing, [180]);
      assert.equal(uac.remoteSdp, SDP_B);
      assert.equal(uas.remoteSdp, SDP_A);
      const info = waitFor<SipRequest>((done) => uas.on('info', (req, srv) => (srv.send(200), done(req))));
      const infoRes = await uac.request('INFO', { body: 'Signal=5\r\n', contentType: 'application/dtmf-relay' });
      assert.equal(infoRes.status, 200);
      assert.equal((await info).text, 'Signal=5\r\n');
      const bye = waitFor<string>((done) => uas.on('destroy', done));
      await uac.bye();
      assert.equal(await bye, 'remote-bye');
      assert.equal(a.dialogCount, 0);
      assert.equal(b.dialogCount, 0);
    });
  }

  it('TCP: the callee hangs up over the same connection (connection reuse, §18.2.2)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    a.onRequest('INVITE', async (req) => {
      const d = await a.createUAS(req, { localSdp: SDP_B });
      setTimeout(() => void d.bye(), 20);
    });
    const uac = await b.createUAC(uriOf(a, 'TCP'), { localSdp: SDP_A });
    const byeReq = await waitFor<SipRequest>((done) => uac.on('bye', done));
    assert.equal(byeReq.source?.transport, 'TCP');
  });

  it('onConfirmed hands over the dialog as the 200 goes out: a BYE read before the ACK reaches it (§12.1.1)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    b.sendAck = () => undefined; // the caller's ACK is lost
    const byeBeforeAck = waitFor<string>((done) =>
      a.onRequest('INVITE', (req) => {
        const answered = a.createUAS(req, {
          localSdp: SDP_B,
          onConfirmed: (d) => d.on('bye', () => done(d.state)),
        });
        answered.catch(() => undefined); // no ACK ever comes: it rejects when the agent closes
      }),
    );
    const uac = await b.createUAC(uriOf(a), { localSdp: SDP_A });
    await uac.bye();
    assert.equal(await byeBeforeAck, 'terminated');
  });

  it('a BYE read before the ACK ends the wait for it: createUAS answers the ended dialog at once', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    b.sendAck = () => undefined; // the caller's ACK is lost; its BYE comes
    const answered = waitFor<Promise<Dialog>>((done) =>
      a.onRequest('INVITE', (req) => done(a.createUAS(req, { localSdp: SDP_B }))),
    );
    const uac = await b.createUAC(uriOf(a), { localSdp: SDP_A });
    await uac.bye();
    const started = Date.now();
    const uas = await await answered;
    assert.equal(uas.state, 'terminated');
    assert.ok(Date.now() - started < 2000, 'not after the ACK timeout');
  });

  it('a re-INVITE updates the remote SDP and is answered with the local SDP (§14)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const uasP = waitFor<Dialog>((done) =>
      a.onRequest('INVITE', async (req) => done(await a.createUAS(req, { localSdp: SDP_B }))),
    );
    const uac = await b.createUAC(uriOf(a), { localSdp: SDP_A });
    const uas = await uasP;
    const newSdp = SDP_A.replace('16000', '16010');
    assert.equal(await uac.modify(newSdp), SDP_B);
    assert.equal(uas.remoteSdp, newSdp);
    await uac.bye();
  });

  it('a failure is a typed SipResponseError carrying the status', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    a.onRequest('INVITE', (_req, srv) => srv.send(486));
    await assert.rejects(
      b.createUAC(uriOf(a), { localSdp: SDP_A }),
      (e: unknown) => e instanceof SipResponseError && e.status === 486,
    );
  });

  it('CANCEL before answer: the caller gets SipCanceledError, the callee 487 and an aborted signal (§9)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const aborted = waitFor<boolean>((done) =>
      a.onRequest('INVITE', (_req, srv) => {
        srv.send(180);
        srv.signal.addEventListener('abort', () => done(true));
      }),
    );
    const ac = new AbortController();
    const call = b.createUAC(uriOf(a), { localSdp: SDP_A, signal: ac.signal, onProvisional: () => ac.abort() });
    await assert.rejects(call, SipCanceledError);
    assert.equal(await aborted, true);
  });

  it('a BYE for an unknown dialog gets 481 (§12.2.2), a CANCEL matching nothing too (§9.2)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const bye = await b.request(uriOf(a), { method: 'BYE', to: `<${uriOf(a)}>;tag=nope` });
    assert.equal(bye.status, 481);
    const cancel = await rawUdp(
      a.address('UDP')!.port,
      'CANCEL sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bKnothing\r\n' +
        'From: <sip:x@127.0.0.1>;tag=1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: nothing\r\nCSeq: 1 CANCEL\r\n' +
        'Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n',
    );
    assert.match(cancel, /^SIP\/2.0 481 /);
  });

  it('a body type we do not read gets 415 with Accept (§8.2.3)', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    a.onRequest('MESSAGE', (_req, srv) => srv.send(200));
    const res = await b.request(uriOf(a), { method: 'MESSAGE', body: 'x', contentType: 'text/plain' });
    assert.equal(res.status, 415);
    assert.ok(res.headers.has('accept'));
  });

  it('REGISTER with digest: SHA-256 and MD5 both offered (RFC 8760), our client answers SHA-256', async () => {
    const [a, b] = [await agents.make(), await agents.make()];
    const digest = new DigestServer({ realm: 'simu.test' });
    const algorithms: string[] = [];
    a.onRequest('REGISTER', async (req, srv) => {
      const v = await digest.verify(req, (u) => (u === 'alice' ? 'secret' : undefined));
      if (!v.ok) return srv.send(digest.status, undefined, { headers: digest.challenge({ stale: v.stale }) });
      algorithms.push(v.algorithm);
      srv.send(200);
    });
    const ok = await b.request(uriOf(a), { method: 'REGISTER', auth: { username: 'alice', password: 'secret' } });
    assert.equal(ok.status, 200);
    assert.deepEqual(algorithms, ['SHA-256']);
    const bad = await b.request(uriOf(a), { method: 'REGISTER', auth: { username: 'alice', password: 'wrong' } });
    assert.equal(bad.status, 401);
  });

  it('a request to a dead peer rejects with SipTransportError (TCP connection refused)', async () => {
    const b = await agents.make();
    await assert.rejects(
      b.request(`sip:nobody@127.0.0.1:${nextPort()};transport=tcp`, { method: 'OPTIONS' }), // nothing listens there
      (e: unknown) => e instanceof SipTransportError && e.code === 'SIP_TRANSPORT',
    );
  });
});
