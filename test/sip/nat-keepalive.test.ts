/**
 * Issue 19 item 5, the mechanism on loopback: the registrar's keep-alives to UDP phones (OPTIONS, answered by a real
 * SIP stack), a dead flow (the phone went away without unregistering) dropped after the allowed misses with the
 * end-user written unregistered, and RFC 5626 outbound registrations told Require: outbound and Flow-Timer and kept
 * open with CRLF keep-alives. The NAT itself (a MASQUERADE namespace with a short conntrack timeout) is
 * test/e2e/sip/nat-keepalive.test.ts.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { findEndUser } from '../../store/index.js';
import { UserAgent } from '../../sip/stack/index.js';
import { accountWithPhone, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';
import { eventually } from '../support/wait.js';

const SIP_PORT = nextPort();

describe('sip/nat: keep-alives to registered UDP phones', function () {
  this.timeout(20000);
  let fx: RegistrarFixture;

  before(async () => {
    fx = await startRegistrar({
      port: SIP_PORT,
      extra: { settings: { keepAliveSeconds: 0.3, keepAliveMisses: 2 } },
    });
  });
  after(async () => fx?.close());

  async function phoneRegisters(name: string, port: number, contactExtra = '', headers: Record<string, string> = {}) {
    const a = await accountWithPhone(fx.db, name);
    const ua = new UserAgent({ logger: quietLogger });
    await ua.listen({ udp: { host: '127.0.0.1', port } });
    const domain = `${a.account.id}.sip.test`;
    const res = await ua.request(`sip:${domain}`, {
      method: 'REGISTER',
      to: `<sip:1001@${domain}>`,
      from: `<sip:1001@${domain}>`,
      headers: { Contact: `<sip:1001@127.0.0.1:${port}${contactExtra}`, Expires: '600', ...headers },
      auth: { username: '1001', password: a.token },
      proxy: `127.0.0.1:${SIP_PORT}`,
    });
    assert.equal(res.status, 200);
    return { a, ua, res };
  }

  it('a phone that answers keeps its binding; one that went away is dropped after 2 misses and unregistered', async () => {
    const port = nextPort();
    const { a, ua, res } = await phoneRegisters('nat-alive', port, '>');
    assert.equal(res.headers.get('flow-timer'), undefined, 'no Flow-Timer for a phone without outbound');
    const answered = fx.registrar.nat.stats.answered;
    await eventually(() => fx.registrar.nat.stats.answered >= answered + 3, 'three answered keep-alives');
    assert.equal(fx.registrar.location.isRegistered(a.account.id, '1001'), true);
    await fx.registrar.settled();
    assert.equal((await findEndUser(fx.db, a.account.id, a.user.id))?.registration_state, 'registered');

    // The phone is gone (its socket closed, as a phone behind a NAT that forgot it): nothing answers any more.
    await ua.close();
    const dropped = fx.registrar.nat.stats.dropped;
    await eventually(() => !fx.registrar.location.isRegistered(a.account.id, '1001'), 'the dead flow dropped', 5000);
    assert.equal(fx.registrar.nat.stats.dropped, dropped + 1);
    await eventually(
      async () => (await findEndUser(fx.db, a.account.id, a.user.id))?.registration_state === 'unregistered',
      'registration_state unregistered',
    );
  });

  it('RFC 5626 outbound: Require: outbound and Flow-Timer in the 200; CRLF keep-alives reach the phone', async () => {
    // A plain socket as the phone's, to see the CRLFs arrive (a SIP stack drops them unseen).
    const port = nextPort();
    const ob = ';ob>;reg-id=1;+sip.instance="<urn:uuid:00000000-0000-4000-8000-000000000001>"';
    const { a, ua, res } = await phoneRegisters('nat-ob', port, ob, { Supported: 'outbound, path' });
    assert.equal(res.headers.get('require'), 'outbound');
    assert.equal(res.headers.get('flow-timer'), '1');
    await ua.close();
    const sock = dgram.createSocket('udp4');
    const got: string[] = [];
    sock.on('message', (m) => got.push(m.toString('latin1')));
    await new Promise<void>((r) => sock.bind(port, '127.0.0.1', () => r()));
    try {
      await eventually(() => got.filter((m) => m === '\r\n\r\n').length >= 2, 'two CRLF keep-alives');
      assert.ok(!got.some((m) => m.startsWith('OPTIONS')), 'no OPTIONS to an outbound flow');
      assert.equal(fx.registrar.location.isRegistered(a.account.id, '1001'), true);
    } finally {
      sock.close();
    }
  });

  it('a STUN Binding request on the SIP port (RFC 5626 §4.4.2) gets a Binding response naming its source', async () => {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const port = sock.address().port;
    const req = Buffer.alloc(20);
    req.writeUInt16BE(0x0001, 0);
    req.writeUInt32BE(0x2112a442, 4);
    for (let i = 8; i < 20; i++) req[i] = i * 7;
    try {
      const res = await new Promise<Buffer>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no STUN response')), 3000);
        sock.once('message', (m) => {
          clearTimeout(timer);
          resolve(m);
        });
        sock.send(req, SIP_PORT, '127.0.0.1');
      });
      assert.equal(res.readUInt16BE(0), 0x0101, 'Binding success');
      assert.deepEqual(res.subarray(8, 20), req.subarray(8, 20), 'same transaction id');
      assert.equal(res.readUInt16BE(20), 0x0020, 'XOR-MAPPED-ADDRESS');
      assert.equal(res.readUInt16BE(26) ^ 0x2112, port);
      const ip = (res.readUInt32BE(28) ^ 0x2112a442) >>> 0;
      assert.equal([ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join('.'), '127.0.0.1');
    } finally {
      sock.close();
    }
  });
});
