import assert from 'node:assert/strict';
import { SecurityGate, SecuritySettingError, type RegistrationLookup } from '../../../sip/security/index.js';
import { makeGate, req } from './helpers.js';

/** A registrar's location service in miniature: end-user key to the addresses holding a registration. */
class Registrations implements RegistrationLookup {
  readonly byUser = new Map<string, string[]>();
  addressesFor(account: string, user: string): Iterable<string> {
    return this.byUser.get(`${account}/${user}`) ?? [];
  }
}

describe('sip/security: authentication abuse', () => {
  it('bans a source at its 11th failure within 60 s, and drops its requests afterwards', () => {
    const { gate, clock } = makeGate();
    const src = '192.0.2.20';
    for (let i = 0; i < 10; i++) {
      assert.equal(gate.authFailed({ source: src, account: 'acc1', user: `${100 + i}` }), 'counted');
      clock.advance(5_000);
    }
    assert.equal(gate.authFailed({ source: src, account: 'acc1', user: '999' }), 'source-banned');
    assert.equal(gate.inspect(req(src, { method: 'REGISTER' })), 'drop');
    assert.equal(gate.isLockedOut({ source: src, account: 'acc1', user: '100' }), true);
    assert.equal(gate.bans()[0].reason, 'auth-failures');
    assert.equal(gate.stats().bansIssued['auth-failures'], 1);
  });

  it('does not ban a source whose failures are spread wider than the window', () => {
    const { gate, clock } = makeGate();
    for (let i = 0; i < 100; i++) {
      assert.equal(gate.authFailed({ source: '192.0.2.21', account: 'a', user: '1' }), 'counted');
      clock.advance(6_100); // 10 per 61 s
    }
    assert.equal(gate.bans().length, 0);
  });

  it('a success does not reset the source count (one good account cannot launder guesses at others)', () => {
    const { gate } = makeGate();
    const src = '192.0.2.22';
    for (let i = 0; i < 10; i++) {
      gate.authFailed({ source: src, account: 'a', user: `${200 + i}` });
      gate.authSucceeded({ source: src, account: 'a', user: '100' });
    }
    assert.equal(gate.authFailed({ source: src, account: 'a', user: '300' }), 'source-banned');
  });

  it('locks an end-user after 20 failures from many sources; a new address is refused, registered phones are not', () => {
    const regs = new Registrations();
    regs.byUser.set('acc1/101', ['10.0.0.5', '::ffff:10.0.0.6']);
    const { gate, clock } = makeGate({ registrations: regs });
    const user = { account: 'acc1', user: '101' };
    // A distributed guess: one failure from each of 21 addresses, so no source is banned.
    for (let i = 1; i <= 20; i++) assert.equal(gate.authFailed({ source: `198.51.100.${i}`, ...user }), 'counted');
    assert.equal(gate.isLockedOut({ source: '198.51.100.50', ...user }), false, 'not locked at 20');
    assert.equal(gate.authFailed({ source: '198.51.100.21', ...user }), 'user-locked');
    assert.equal(gate.bans().length, 0);

    assert.equal(gate.isLockedOut({ source: '198.51.100.50', ...user }), true, 'a new address is refused');
    assert.equal(gate.isLockedOut({ source: '10.0.0.5', ...user }), false, 'the registered phone keeps working');
    assert.equal(gate.isLockedOut({ source: '10.0.0.6', ...user }), false, 'mapped addresses are folded');
    assert.equal(
      gate.isLockedOut({ source: '198.51.100.50', account: 'acc1', user: '102' }),
      false,
      'others unaffected',
    );
    assert.equal(gate.isLockedOut({ source: '198.51.100.50', account: 'acc2', user: '101' }), false, 'per account');

    // The phone re-registers successfully: that does not lift the lockout for strangers.
    gate.authSucceeded({ source: '10.0.0.5', ...user });
    assert.equal(gate.isLockedOut({ source: '198.51.100.50', ...user }), true);

    clock.advance(300_000);
    assert.equal(gate.isLockedOut({ source: '198.51.100.50', ...user }), false, 'the lockout ends after 300 s');
    const st = gate.stats();
    assert.equal(st.userLockouts, 1);
    assert.equal(st.lockedOutRefusals, 2);
  });

  it('without a registration lookup every address is refused during a lockout', () => {
    const { gate } = makeGate({ settings: { auth: { maxFailuresPerUser: 2 } } });
    for (let i = 0; i < 3; i++) gate.authFailed({ source: `198.51.100.${i}`, account: 'a', user: '1' });
    assert.equal(gate.isLockedOut({ source: '10.0.0.5', account: 'a', user: '1' }), true);
    gate.setRegistrationLookup({ addressesFor: () => ['10.0.0.5'] });
    assert.equal(gate.isLockedOut({ source: '10.0.0.5', account: 'a', user: '1' }), false);
  });

  it('unknown user names are locked exactly like real ones (the lockout reveals nothing)', () => {
    const { gate } = makeGate({ settings: { auth: { maxFailuresPerUser: 3 } } });
    const outcomes = (user: string) =>
      Array.from({ length: 4 }, (_, i) => gate.authFailed({ source: `198.51.100.${i}`, account: 'a', user }));
    assert.deepEqual(outcomes('real-101'), outcomes('no-such-user'));
  });

  it("a success forgets the user's recent failures (stale nonces of a real phone are not an attack)", () => {
    const { gate } = makeGate({ settings: { auth: { maxFailuresPerUser: 3 } } });
    const u = { account: 'a', user: '1' };
    for (let i = 0; i < 3; i++) gate.authFailed({ source: `198.51.100.${i}`, ...u });
    gate.authSucceeded({ source: '10.0.0.5', ...u });
    assert.equal(gate.authFailed({ source: '198.51.100.9', ...u }), 'counted');
  });

  it('trusted addresses are never banned for failures', () => {
    const { gate } = makeGate({ settings: { trustedAddresses: ['203.0.113.1'] } });
    for (let i = 0; i < 100; i++) assert.equal(gate.authFailed({ source: '203.0.113.1', user: 'trunk' }), 'counted');
    assert.equal(gate.bans().length, 0);
    assert.equal(gate.stats().authFailures, 100);
  });

  it('failures without a user name count against the source only', () => {
    const { gate } = makeGate({ settings: { auth: { maxFailuresPerSource: 2 } } });
    assert.equal(gate.authFailed({ source: '192.0.2.30' }), 'counted');
    assert.equal(gate.authFailed({ source: '192.0.2.30' }), 'counted');
    assert.equal(gate.authFailed({ source: '192.0.2.30' }), 'source-banned');
    assert.equal(gate.stats().trackedUsers, 0);
  });
});

describe('sip/security: settings and life cycle', () => {
  it('refuses bad settings at construction with a stable code', () => {
    assert.throws(
      () => new SecurityGate({ settings: { flood: { maxRequests: 0 } } }),
      (e: any) => e instanceof SecuritySettingError && e.code === 'SECURITY_BAD_SETTING',
    );
    assert.throws(() => new SecurityGate({ settings: { scanners: { banAfter: -1 } } }), SecuritySettingError);
    assert.throws(() => new SecurityGate({ settings: { trustedAddresses: ['not-an-ip'] } }), /not an IP address/);
  });

  it('close() stops its timers and is safe to call twice', async () => {
    const { gate, clock } = makeGate();
    assert.equal(clock.pendingTimers, 1);
    await Promise.all([gate.close(), gate.close()]);
    await gate.close();
    assert.equal(clock.pendingTimers, 0);
  });
});
