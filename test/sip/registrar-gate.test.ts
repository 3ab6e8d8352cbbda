/**
 * The registrar reports authentication outcomes to the SecurityGate (docs/security.md, the registrar's side): a
 * password-guessing run against one extension locks it, a locked extension is answered exactly like a wrong
 * password even with the right token, and phones already registered from an address keep working.
 */
import assert from 'node:assert/strict';
import { SecurityGate } from '../../sip/security/index.js';
import { UserAgent, type SipResponse } from '../../sip/stack/index.js';
import { accountWithPhone, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';

const SIP_PORT = nextPort();
const PHONE_PORT = nextPort();

describe('sip/registrar with the SecurityGate', function () {
  this.timeout(20000);
  let fx: RegistrarFixture;
  let gate: SecurityGate;
  let phone: UserAgent;

  before(async () => {
    gate = new SecurityGate({
      settings: { auth: { maxFailuresPerUser: 3, maxFailuresPerSource: 1000 } },
      logger: quietLogger,
    });
    fx = await startRegistrar({ port: SIP_PORT, extra: { gate } });
    phone = new UserAgent({ logger: quietLogger });
    await phone.listen({ udp: { host: '127.0.0.1', port: PHONE_PORT } });
  });
  after(async () => {
    await phone?.close();
    await fx?.close();
    await gate?.close();
  });

  const register = (accountId: string, ext: string, password: string): Promise<SipResponse> =>
    phone.request(`sip:${accountId}.sip.simu.test`, {
      method: 'REGISTER',
      to: `<sip:${ext}@${accountId}.sip.simu.test>`,
      from: `<sip:${ext}@${accountId}.sip.simu.test>`,
      headers: { Contact: `<sip:${ext}@127.0.0.1:${PHONE_PORT}>` },
      auth: { username: ext, password },
      proxy: `127.0.0.1:${SIP_PORT}`,
    });

  it('failures are counted per end-user; once locked, the right token is answered like a wrong one', async () => {
    const a = await accountWithPhone(fx.db, 'locked');
    const before = gate.stats().authFailures;
    for (let i = 0; i < 4; i++) assert.equal((await register(a.account.id, '1001', 'guess' + i)).status, 401);
    assert.equal(gate.stats().authFailures - before, 4);
    assert.equal(gate.isLockedOut({ source: '127.0.0.1', account: a.account.id, user: '1001' }), true);
    assert.equal((await register(a.account.id, '1001', a.token)).status, 401);
    assert.equal(fx.registrar.location.isRegistered(a.account.id, '1001'), false);
  });

  it('an extension already registered from this address keeps working while locked out elsewhere', async () => {
    const a = await accountWithPhone(fx.db, 'kept');
    assert.equal((await register(a.account.id, '1001', a.token)).status, 200);
    for (let i = 0; i < 4; i++) await register(a.account.id, '1001', 'guess' + i);
    assert.equal(gate.isLockedOut({ source: '198.51.100.7', account: a.account.id, user: '1001' }), true);
    assert.equal(gate.isLockedOut({ source: '127.0.0.1', account: a.account.id, user: '1001' }), false);
    assert.equal((await register(a.account.id, '1001', a.token)).status, 200);
  });
});
