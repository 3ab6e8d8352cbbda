/**
 * A node behind a SIP front (sip/front.ts): a REGISTER's Path (RFC 3327) from a trusted front is kept with the
 * binding, in the store for UDP, and returned in the 200; from an address not trusted it is ignored. The sender of a
 * request through a trusted front is read from the Via below the front's.
 */
import assert from 'node:assert/strict';
import { SipFront } from '../../sip/front.js';
import { UserAgent, parseMessage, type SipRequest, type SipResponse } from '../../sip/stack/index.js';
import { accountWithPhone, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';

const PATH_A = '<sip:front@127.0.0.1:5999;lr;received=sip:203.0.113.7:40123%3Btransport%3Dtcp>';
const PATH_B = '<sip:edge@127.0.0.1:5998;lr>';

describe('sip/registrar: Path through a trusted front', function () {
  this.timeout(20000);
  const fixtures: RegistrarFixture[] = [];
  let phone: UserAgent;
  const PHONE_PORT = nextPort();

  before(async () => {
    phone = new UserAgent({ logger: quietLogger });
    await phone.listen({ udp: { host: '127.0.0.1', port: PHONE_PORT } });
  });
  after(async () => {
    await phone?.close();
    for (const fx of fixtures) await fx.close();
  });

  async function registerThrough(
    fronts: string,
  ): Promise<{ fx: RegistrarFixture; res: SipResponse; acct: Awaited<ReturnType<typeof accountWithPhone>> }> {
    const port = nextPort();
    const fx = await startRegistrar({ port, env: { SIMU_SIP_TRUSTED_FRONTS: fronts } });
    fixtures.push(fx);
    const acct = await accountWithPhone(fx.db, `front${fixtures.length}`);
    const aor = `<sip:1001@${acct.account.id}.sip.simu.test>`;
    const res = await phone.request(`sip:${acct.account.id}.sip.simu.test`, {
      method: 'REGISTER',
      to: aor,
      from: aor,
      headers: { Contact: `<sip:1001@127.0.0.1:${PHONE_PORT}>`, Expires: '600', Path: [PATH_A, PATH_B] },
      auth: { username: '1001', password: acct.token },
      proxy: `127.0.0.1:${port}`,
    });
    return { fx, res, acct };
  }

  it('from a trusted front the Path is kept with the binding, stored, and returned in the 200', async () => {
    const { fx, res, acct } = await registerThrough('127.0.0.0/8');
    assert.equal(res.status, 200);
    assert.deepEqual(res.headers.getAll('path'), [PATH_A, PATH_B]);
    const [b] = fx.registrar.location.lookup(acct.account.id, '1001');
    assert.deepEqual(b?.path, [PATH_A, PATH_B]);
    await fx.registrar.settled();
    const row = await fx.db('registrations').where({ end_user_id: acct.user.id }).first();
    assert.deepEqual(JSON.parse(row.path), [PATH_A, PATH_B]);
  });

  it('from an address that is not a trusted front the Path is ignored', async () => {
    const { fx, res, acct } = await registerThrough('192.0.2.1');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('path'), undefined);
    const [b] = fx.registrar.location.lookup(acct.account.id, '1001');
    assert.equal(b?.path, undefined);
    await fx.registrar.settled();
    const row = await fx.db('registrations').where({ end_user_id: acct.user.id }).first();
    assert.equal(row.path, null);
  });
});

describe('sip/front: the sender of a request through a trusted front', () => {
  const invite = (source: string, vias: string[]): SipRequest => {
    const text =
      'INVITE sip:254711600001@10.0.0.11 SIP/2.0\r\n' +
      vias.map((v) => `Via: ${v}\r\n`).join('') +
      'From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n';
    const parsed = parseMessage(Buffer.from(text));
    assert.ok(parsed.ok, 'parsed');
    const req = parsed.message as SipRequest;
    req.source = { address: source, port: 5060, transport: 'UDP', localPort: 5060, flowId: 'f' };
    return req;
  };
  const front = new SipFront(['10.0.0.2']);
  const vias = [
    'SIP/2.0/UDP 10.0.0.2;branch=z9hG4bKf',
    'SIP/2.0/UDP 192.0.2.9:5070;rport=5071;received=198.51.100.4;branch=z9hG4bKc',
  ];

  it("is the received and rport of the Via below the front's", () => {
    assert.deepEqual(front.origin(invite('10.0.0.2', vias)), { address: '198.51.100.4', port: 5071, viaFront: true });
  });

  it('is the request source itself when the request does not come from a trusted front', () => {
    assert.deepEqual(front.origin(invite('10.0.0.3', vias)), { address: '10.0.0.3', port: 5060, viaFront: false });
  });

  it('is the host and port of that Via when the front added no received or rport', () => {
    const plain = ['SIP/2.0/UDP 10.0.0.2;branch=z9hG4bKf', 'SIP/2.0/UDP 192.0.2.9:5070;branch=z9hG4bKc'];
    assert.deepEqual(front.origin(invite('10.0.0.2', plain)), { address: '192.0.2.9', port: 5070, viaFront: true });
  });
});
