/**
 * Registrar limits from the security audit: the bindings of one address-of-record are capped (a new contact
 * beyond the cap replaces the binding that expires soonest; one REGISTER naming more contacts than the cap gets
 * 403), and a digest whose uri names neither the Request-URI nor this switch is a failed credential: 403 with the
 * reason (RFC 3261 §22.4).
 */
import assert from 'node:assert/strict';
import {
  DigestClient,
  ManualClock,
  parseMessage,
  SipRequest,
  UserAgent,
  type SipResponse,
} from '../../sip/stack/index.js';
import { accountWithPhone, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';

const SIP_PORT = nextPort();
const PHONE_PORT = nextPort();
const PROXY = `127.0.0.1:${SIP_PORT}`;
const domainOf = (accountId: string) => `${accountId}.sip.simu.test`;

describe('sip/registrar limits: bindings per address-of-record, digest uri', function () {
  this.timeout(20000);
  let fx: RegistrarFixture;
  let phone: UserAgent;
  let clock: ManualClock;
  let acct: Awaited<ReturnType<typeof accountWithPhone>>;
  let n = 0;

  before(async () => {
    clock = new ManualClock();
    clock.advance(Date.now());
    fx = await startRegistrar({ port: SIP_PORT, clock, extra: { settings: { maxBindingsPerUser: 3 } } });
    phone = new UserAgent({ logger: quietLogger });
    await phone.listen({ udp: { host: '127.0.0.1', port: PHONE_PORT } });
  });
  after(async () => {
    await phone?.close();
    await fx?.close();
  });
  beforeEach(async () => {
    acct = await accountWithPhone(fx.db, `limits${++n}`);
  });

  const aor = () => `<sip:1001@${domainOf(acct.account.id)}>`;
  const register = (contact: string | string[], headers: Record<string, string> = {}): Promise<SipResponse> =>
    phone.request(`sip:${domainOf(acct.account.id)}`, {
      method: 'REGISTER',
      to: aor(),
      from: aor(),
      headers: { Contact: contact, Expires: '600', ...headers },
      auth: { username: '1001', password: acct.token },
      proxy: PROXY,
    });
  const contacts = () =>
    fx.registrar.location
      .lookup(acct.account.id, '1001')
      .map((b) => b.contact)
      .sort();

  it('a fourth contact beyond a cap of 3 replaces the binding that expires soonest; refreshed ones stay', async () => {
    for (const port of [5001, 5002, 5003]) {
      assert.equal((await register(`<sip:1001@127.0.0.1:${port}>`)).status, 200);
      clock.advance(10_000);
    }
    // 5001 refreshes: now 5002 is the one refreshed least recently.
    assert.equal((await register('<sip:1001@127.0.0.1:5001>')).status, 200);
    clock.advance(10_000);
    const res = await register('<sip:1001@127.0.0.1:5004>');
    assert.equal(res.status, 200);
    assert.equal(res.headers.getAll('contact').length, 3, 'the 200 lists the bindings after the change');
    assert.deepEqual(contacts(), ['sip:1001@127.0.0.1:5001', 'sip:1001@127.0.0.1:5003', 'sip:1001@127.0.0.1:5004']);
    // Many registrations later the table still holds three.
    for (let p = 5100; p < 5110; p++) assert.equal((await register(`<sip:1001@127.0.0.1:${p}>`)).status, 200);
    assert.equal(contacts().length, 3);
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), true);
  });

  it('one REGISTER naming more contacts than the cap is refused with 403 and changes nothing', async () => {
    assert.equal((await register('<sip:1001@127.0.0.1:5001>')).status, 200);
    const many = [5002, 5003, 5004, 5005].map((p) => `<sip:1001@127.0.0.1:${p}>`);
    const res = await register(many);
    assert.equal(res.status, 403);
    assert.match(res.headers.get('warning') ?? '', /at most 3 contacts/);
    assert.deepEqual(contacts(), ['sip:1001@127.0.0.1:5001']);
  });

  it('a digest computed for another server gets 403 naming the digest uri, and registers nothing', async () => {
    const challenge = await phone.request(`sip:${domainOf(acct.account.id)}`, {
      method: 'REGISTER',
      to: aor(),
      from: aor(),
      headers: { Contact: '<sip:1001@127.0.0.1:5001>' },
      proxy: PROXY,
    });
    assert.equal(challenge.status, 401);
    // Right password, our fresh nonce, but computed over (and naming) another resource.
    const other = parseMessage(
      Buffer.from(
        `REGISTER sip:elsewhere.invalid SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:1;branch=z9hG4bKx\r\nFrom: ${aor()};tag=1\r\n` +
          `To: ${aor()}\r\nCall-ID: x\r\nCSeq: 1 REGISTER\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`,
      ),
    );
    assert.ok(other.ok && other.message instanceof SipRequest);
    assert.ok(new DigestClient({ username: '1001', password: acct.token }).authorize(other.message, challenge));
    const res = await phone.request(`sip:${domainOf(acct.account.id)}`, {
      method: 'REGISTER',
      to: aor(),
      from: aor(),
      headers: { Contact: '<sip:1001@127.0.0.1:5001>', Authorization: other.message.headers.get('authorization')! },
      proxy: PROXY,
    });
    assert.equal(res.status, 403);
    assert.match(res.headers.get('warning') ?? '', /digest uri names neither the Request-URI nor this switch/);
    assert.deepEqual(contacts(), []);
  });
});
