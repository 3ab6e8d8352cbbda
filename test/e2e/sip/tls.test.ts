import assert from 'node:assert/strict';
import { SipError } from '../../../sip/stack/index.js';
import {
  startTestSwitch,
  createAccountWithDid,
  api,
  type TestAccount,
  allocateSwitchPorts,
} from '../support/harness.js';
import { TestPhone } from '../support/phone.js';
import { nextPort, nextPorts } from '../../support/ports.js';

const PORTS = allocateSwitchPorts();
const PHONE_SIP = nextPorts(5); // phone n at PHONE_SIP + n
const PHONE_MEDIA = nextPorts(5);
const TLS_PORT = nextPort();

/**
 * Issue 10, encryption: with sip.requireEncryption a phone must use TLS (or WSS); a TLS phone registers and calls
 * another with SRTP (SDES keys, RFC 4568) negotiated through rtpengine on both legs.
 */
describe('e2e: TLS phones with SRTP, encryption required', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const phones: TestPhone[] = [];
  const SIP = PORTS.sip;
  const TLS = TLS_PORT;

  before(async () => {
    ctx = await startTestSwitch({
      ...PORTS,
      tls: TLS,
      env: { SIMU_SIP_REQUIRE_ENCRYPTION: 'true' },
    });
    acct = await createAccountWithDid(ctx.db, '+254711500001');
  });

  after(async () => {
    for (const p of phones) await p.close();
    await ctx?.sw.stop();
  });

  async function phone(n: number, transport: 'udp' | 'tls'): Promise<TestPhone> {
    const user = await api(ctx.baseUrl, acct.key, 'POST', '/api/users/create', { email: `tls${n}@example.com` });
    const minted = await api(ctx.baseUrl, acct.key, 'POST', '/api/phone-tokens/mint', { uuid: user.body.uuid });
    const port = transport === 'tls' ? TLS : SIP;
    const p = await new TestPhone(
      user.body.extension_number,
      minted.body.token,
      acct.id,
      PHONE_SIP + n,
      PHONE_MEDIA + n,
      port,
      transport,
    ).start();
    phones.push(p);
    return p;
  }

  it('a phone on plain UDP is refused with 403 when encryption is required', async () => {
    const p = await phone(1, 'udp');
    assert.equal(await p.register(), 403);
  });

  it('TLS phones register and call each other; both legs get RTP/SAVP with SDES keys from rtpengine', async () => {
    const a = await phone(2, 'tls');
    const b = await phone(3, 'tls');
    assert.equal(await a.register(), 200);
    assert.equal(await b.register(), 200);
    let offeredToB = '';
    const answered = new Promise<void>((resolve) => {
      b.ua.onRequest('INVITE', async (req, srv) => {
        offeredToB = req.body.toString();
        srv.send(180, 'Ringing');
        b.dialog = await b.ua.createUAS(req, { localSdp: b.sdp });
        resolve();
      });
    });
    await a.call(b.ext);
    await answered;
    assert.match(offeredToB, /m=audio \d+ RTP\/SAVP/, offeredToB);
    assert.match(offeredToB, /a=crypto:\d+ AES_CM_128_HMAC_SHA1_80 inline:/);
    const answerToA = a.dialog!.remoteSdp ?? '';
    assert.match(answerToA, /m=audio \d+ RTP\/SAVP/, answerToA);
    assert.match(answerToA, /a=crypto:\d+ AES_CM_128_HMAC_SHA1_80 inline:/);
    // Every SDP carried SRTP keys; none crossed the network in clear (TLS), and rtpengine relays SRTP between the legs.
    // The switch counts the call answered once A's ACK arrives; hang up after that.
    for (let i = 0; i < 100; i++) {
      const live = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      if (live?.status === 'answered') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await a.dialog!.bye();
    const deadline = Date.now() + 5000;
    let call;
    while (Date.now() < deadline) {
      call = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls/?limit=1')).body.calls[0];
      if (call?.ended_at) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(call.direction, 'internal');
    assert.equal(call.status, 'completed', JSON.stringify(call));
  });

  it('an INVITE over UDP is refused too', async () => {
    await assert.rejects(phones[0].call(phones[1].ext), (e: unknown) => e instanceof SipError && e.status === 403);
  });
});
