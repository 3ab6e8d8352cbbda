/**
 * The registrar against a real SipApplication on 127.0.0.1, driven by the stack's own UserAgent as the phone
 * (UDP and TCP), with an injected clock for expiry: digest and Bearer credentials, binding rules of RFC 3261
 * §10.3, the stored registration state, AUTH.0200 / AUTH.0401, and INVITE authentication.
 */
import assert from 'node:assert/strict';
import { ManualClock, UserAgent, type SipResponse } from '../../sip/stack/index.js';
import { revokePhoneToken, updateEndUser, findEndUser, insertEndUser } from '../../store/index.js';
import { shortPassword } from '../../sip/registrar-credentials.js';
import { accountWithPhone, mintPhoneToken, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort, nextPorts } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';

const SIP_PORT = nextPort();
const PHONE_PORT = nextPorts(6); // UDP and TCP; +1 and +2 more contacts; +5 the phone's WebSocket
const WS_PORT = nextPort();
const PROXY = `127.0.0.1:${SIP_PORT}`;
/**
 * The account's SIP domain in its uuid form, `<account-uuid>.<suffix>` (the readable label form and a bare uuid
 * beginning with a digit are tested with SIPp in test/e2e/sip/sip-domain.test.ts).
 */
const domainOf = (accountId: string) => `${accountId}.sip.simu.test`;

describe('sip/registrar: REGISTER and INVITE authentication with phone tokens', function () {
  this.timeout(20000);
  let fx: RegistrarFixture;
  let phone: UserAgent;
  let clock: ManualClock;

  before(async () => {
    clock = new ManualClock();
    clock.advance(Date.now());
    // SHA-256 offered first here: the stack's own client answers it (the default, MD5 alone, is proven with SIPp
    // and baresip).
    fx = await startRegistrar({
      port: SIP_PORT,
      clock,
      listen: { ws: { host: '127.0.0.1', port: WS_PORT } },
      extra: { settings: { digestAlgorithms: ['SHA-256', 'MD5'] } },
    });
    phone = new UserAgent({ logger: quietLogger });
    await phone.listen({
      ws: { host: '127.0.0.1', port: PHONE_PORT + 5 },
      udp: { host: '127.0.0.1', port: PHONE_PORT },
      tcp: { host: '127.0.0.1', port: PHONE_PORT },
    });
  });
  after(async () => {
    await phone?.close();
    await fx?.close();
  });

  let acct: Awaited<ReturnType<typeof accountWithPhone>>;
  let n = 0;
  beforeEach(async () => {
    acct = await accountWithPhone(fx.db, `acme${++n}`);
    fx.events.length = 0;
  });

  const aor = (ext = '1001', account = acct.account.id) => `<sip:${ext}@${domainOf(account)}>`;
  function register(opts: {
    password?: string;
    username?: string;
    expires?: string;
    contact?: string | string[];
    headers?: Record<string, string | string[]>;
    to?: string;
    tcp?: boolean;
    ws?: boolean;
  }): Promise<SipResponse> {
    const headers: Record<string, string | string[]> = { ...opts.headers };
    if (opts.contact !== undefined) headers.Contact = opts.contact;
    else headers.Contact = `<sip:1001@127.0.0.1:${PHONE_PORT}>`;
    if (opts.expires !== undefined) headers.Expires = opts.expires;
    return phone.request(`sip:${domainOf(acct.account.id)}`, {
      method: 'REGISTER',
      to: opts.to ?? aor(),
      from: opts.to ?? aor(),
      headers,
      auth: opts.password !== undefined ? { username: opts.username ?? '1001', password: opts.password } : undefined,
      proxy: opts.ws ? `127.0.0.1:${WS_PORT};transport=ws` : opts.tcp ? `${PROXY};transport=tcp` : PROXY,
    });
  }
  const codes = () => fx.events.map((e) => e.code);

  it('a REGISTER without credentials is challenged with SHA-256 and MD5 digest (as configured) in the account realm', async () => {
    const res = await register({});
    assert.equal(res.status, 401);
    const ch = res.headers.getAll('www-authenticate');
    assert.equal(ch.length, 2);
    assert.match(ch[0], new RegExp(`^Digest realm="${acct.account.id}".*algorithm=SHA-256`));
    assert.match(ch[1], /algorithm=MD5/);
  });

  it('digest with the phone token as password registers: 200 with the binding, state stored, AUTH.0200 once', async () => {
    const res = await register({ password: acct.token, expires: '600' });
    assert.equal(res.status, 200);
    assert.match(
      res.headers.get('contact') ?? '',
      new RegExp(`^<sip:1001@127\\.0\\.0\\.1:${PHONE_PORT}>;expires=600$`),
    );
    await fx.registrar.settled();
    const u = await findEndUser(fx.db, acct.account.id, acct.user.id);
    assert.equal(u?.registration_state, 'registered');
    assert.equal(u?.last_registered_at, new Date(clock.now()).toISOString());
    assert.deepEqual(codes(), ['AUTH.0200']);
    assert.equal(fx.events[0].accountId, acct.account.id);
    const b = fx.registrar.location.lookup(acct.account.id, '1001');
    assert.equal(b.length, 1);
    assert.equal(b[0].transport, 'UDP');
    assert.equal(b[0].tokenId, acct.tokenId);
    // A refresh re-verifies the token but is not a new authorization event.
    clock.advance(60_000);
    assert.equal((await register({ password: acct.token, expires: '600' })).status, 200);
    await fx.registrar.settled();
    assert.deepEqual(codes(), ['AUTH.0200']);
    const u2 = await findEndUser(fx.db, acct.account.id, acct.user.id);
    assert.equal(u2?.last_registered_at, new Date(clock.now()).toISOString());
  });

  it('the short form of the token (its signature segment) is accepted as the password as well', async () => {
    assert.equal((await register({ password: shortPassword(acct.token) })).status, 200);
    assert.equal((await register({ password: shortPassword(acct.token).slice(1) })).status, 401);
  });

  it('a token minted before its iat was stored (issued_at null) still registers, by the created_at second', async () => {
    const legacy = await mintPhoneToken(fx.db, acct.user);
    await fx.db('phone_tokens').where({ id: legacy.tokenId }).update({ issued_at: null });
    assert.equal((await register({ password: legacy.token })).status, 200);
    assert.equal((await register({ password: shortPassword(legacy.token) })).status, 200);
  });

  it('the domain may be the bare account uuid (when it is a valid hostname) or <account-uuid>.<anything>', async () => {
    const other = `<sip:1001@${acct.account.id}.example.net>`;
    assert.equal((await register({ password: acct.token, to: other })).status, 200);
    const id = (acct.account.id[0] === 'a' ? 'b' : 'a') + acct.account.id.slice(1); // a valid toplabel
    await fx
      .db('accounts')
      .insert({ ...(await fx.db('accounts').where({ id: acct.account.id }).first()), id, sip_label: null });
    const user = await insertEndUser(fx.db, id, 'bare@example.com', 'bare');
    const { token } = await mintPhoneToken(fx.db, user);
    const res = await phone.request(`sip:${id}`, {
      method: 'REGISTER',
      to: `<sip:1001@${id}>`,
      from: `<sip:1001@${id}>`,
      headers: { Contact: `<sip:1001@127.0.0.1:${PHONE_PORT}>` },
      auth: { username: '1001', password: token },
      proxy: PROXY,
    });
    assert.equal(res.status, 200);
    assert.equal(fx.registrar.location.isRegistered(id, '1001'), true);
  });

  it('any valid token of the end-user is accepted; the binding records which one', async () => {
    const second = await mintPhoneToken(fx.db, acct.user);
    assert.equal((await register({ password: second.token })).status, 200);
    assert.equal(fx.registrar.location.lookup(acct.account.id, '1001')[0].tokenId, second.tokenId);
  });

  it('a wrong password and an unknown extension get the same answer with the same headers', async () => {
    const wrong = await register({ password: acct.token + 'x' });
    const unknown = await register({ password: acct.token, username: '1999', to: aor('1999') });
    const unknownAccount = await register({
      password: acct.token,
      to: aor('1001', '00000000-0000-4000-8000-000000000000'),
    });
    for (const r of [wrong, unknown, unknownAccount]) assert.equal(r.status, 401);
    const shape = (r: SipResponse) =>
      r.headers
        .getAll('www-authenticate')
        .map((v) => v.replace(/nonce="[^"]*"/, 'nonce=N').replace(/realm="[^"]*"/, 'realm=R'));
    assert.deepEqual(shape(wrong), shape(unknown));
    assert.deepEqual(shape(wrong), shape(unknownAccount));
    const names = (r: SipResponse) =>
      r.headers
        .entries()
        .map(([k]) => k)
        .filter((k) => k !== 'www-authenticate');
    assert.deepEqual(names(wrong), names(unknown));
    assert.equal(codes().length, 0);
  });

  it('a revoked token is refused at once with 403 and AUTH.0401, also on a refresh', async () => {
    assert.equal((await register({ password: acct.token })).status, 200);
    await revokePhoneToken(fx.db, acct.account.id, acct.tokenId);
    const res = await register({ password: acct.token });
    assert.equal(res.status, 403);
    await fx.registrar.settled();
    assert.deepEqual(codes(), ['AUTH.0200', 'AUTH.0401']);
    assert.equal(fx.events[1].data.reason, 'revoked');
    assert.equal(fx.events[1].data.tokenId, acct.tokenId);
  });

  it('revoking a token (or disabling the end-user) takes its phone off the location at the next sweep', async () => {
    assert.equal((await register({ password: acct.token })).status, 200);
    const other = await accountWithPhone(fx.db, `disabled${n}`);
    const otherAor = `<sip:1001@${domainOf(other.account.id)}>`;
    const res = await phone.request(`sip:${domainOf(other.account.id)}`, {
      method: 'REGISTER',
      to: otherAor,
      from: otherAor,
      headers: { Contact: `<sip:1001@127.0.0.1:${PHONE_PORT}>`, Authorization: `Bearer ${other.token}` },
      proxy: PROXY,
    });
    assert.equal(res.status, 200);
    fx.registrar.sweep();
    await fx.registrar.settled();
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), true, 'valid tokens stay');
    await revokePhoneToken(fx.db, acct.account.id, acct.tokenId); // as the API or another process would
    await updateEndUser(fx.db, other.account.id, other.user.id, { is_active: false });
    fx.registrar.sweep();
    await fx.registrar.settled();
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), false, 'no call reaches a revoked token');
    assert.equal(fx.registrar.location.isRegistered(other.account.id, '1001'), false, 'nor a disabled end-user');
    assert.equal((await findEndUser(fx.db, acct.account.id, acct.user.id))?.registration_state, 'unregistered');
  });

  it('an expired token is refused with 403 and AUTH.0401', async () => {
    const short = await mintPhoneToken(fx.db, acct.user, { ttlSeconds: 120 });
    await revokePhoneToken(fx.db, acct.account.id, acct.tokenId);
    assert.equal((await register({ password: short.token })).status, 200);
    clock.advance(Math.max(0, Date.now() + 121_000 - clock.now())); // the token's expiry is on the wall clock
    assert.equal((await register({ password: short.token })).status, 403);
    await fx.registrar.settled();
    assert.equal(fx.events.at(-1)?.code, 'AUTH.0401');
    assert.equal(fx.events.at(-1)?.data.reason, 'expired');
  });

  it('a disabled end-user is refused with 403 (after proving the credential)', async () => {
    await updateEndUser(fx.db, acct.account.id, acct.user.id, { is_active: false });
    assert.equal((await register({ password: acct.token })).status, 403);
    assert.equal((await register({ password: 'guess' })).status, 401);
  });

  it('expiry: 423 below 60 s, capped at 7200 s, default 3600 s; several contacts; Expires 0 and * remove', async () => {
    const r423 = await register({ password: acct.token, expires: '30' });
    assert.equal(r423.status, 423);
    assert.equal(r423.headers.get('min-expires'), '60');
    const long = await register({ password: acct.token, expires: '100000' });
    assert.match(long.headers.get('contact') ?? '', /expires=7200$/);
    const two = await register({
      password: acct.token,
      contact: [`<sip:1001@127.0.0.1:${PHONE_PORT + 1}>`, `<sip:1001@127.0.0.1:${PHONE_PORT + 2}>;expires=120`],
    });
    assert.equal(two.status, 200);
    const listed = two.headers.getAll('contact').sort();
    assert.deepEqual(listed, [
      `<sip:1001@127.0.0.1:${PHONE_PORT}>;expires=7200`,
      `<sip:1001@127.0.0.1:${PHONE_PORT + 1}>;expires=3600`,
      `<sip:1001@127.0.0.1:${PHONE_PORT + 2}>;expires=120`,
    ]);
    const one = await register({ password: acct.token, contact: `<sip:1001@127.0.0.1:${PHONE_PORT + 1}>;expires=0` });
    assert.equal(one.headers.getAll('contact').length, 2);
    assert.equal(fx.registrar.location.lookup(acct.account.id, '1001').length, 2);
    const star = await register({ password: acct.token, contact: '*', expires: '0' });
    assert.equal(star.status, 200);
    assert.equal(star.headers.getAll('contact').length, 0);
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), false);
    await fx.registrar.settled();
    assert.equal((await findEndUser(fx.db, acct.account.id, acct.user.id))?.registration_state, 'unregistered');
    assert.equal((await register({ password: acct.token, contact: '*', expires: '60' })).status, 400);
  });

  it('an expired binding is swept and the end-user written back to unregistered', async () => {
    assert.equal((await register({ password: acct.token, expires: '60' })).status, 200);
    await fx.registrar.settled();
    assert.equal((await findEndUser(fx.db, acct.account.id, acct.user.id))?.registration_state, 'registered');
    clock.advance(59_000);
    await fx.registrar.settled();
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), true);
    clock.advance(6_000); // past expiry and one sweep period
    await fx.registrar.settled();
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), false);
    assert.equal((await findEndUser(fx.db, acct.account.id, acct.user.id))?.registration_state, 'unregistered');
  });

  it('Bearer over TCP registers; the binding keeps the TCP flow', async () => {
    const res = await register({ tcp: true, headers: { Authorization: `Bearer ${acct.token}` } });
    assert.equal(res.status, 200);
    const [b] = fx.registrar.location.lookup(acct.account.id, '1001');
    assert.equal(b.transport, 'TCP');
    assert.ok(b.flowId.length > 0);
    await fx.registrar.settled();
    assert.deepEqual(codes(), ['AUTH.0200']);
  });

  it('Bearer over WebSocket (a browser phone): the binding keeps the WS flow its calls must go back on', async () => {
    const res = await register({
      ws: true,
      contact: '<sip:k3v9x2@df7jal23ls0d.invalid;transport=ws>',
      headers: { Authorization: `Bearer ${acct.token}` },
    });
    assert.equal(res.status, 200);
    const [b] = fx.registrar.location.lookup(acct.account.id, '1001');
    assert.equal(b.transport, 'WS');
    assert.equal(b.contact, 'sip:k3v9x2@df7jal23ls0d.invalid;transport=ws');
    assert.ok(b.flowId.length > 0);
  });

  it('a browser phone that closes its WebSocket is unregistered at once, not at expiry', async () => {
    const browser = new UserAgent({ logger: quietLogger });
    await browser.listen({ ws: { host: '127.0.0.1', port: 0 } });
    try {
      const res = await browser.request(`sip:${domainOf(acct.account.id)}`, {
        method: 'REGISTER',
        to: aor(),
        from: aor(),
        headers: { Contact: '<sip:tab1@tab1.invalid;transport=ws>', Authorization: `Bearer ${acct.token}` },
        proxy: `127.0.0.1:${WS_PORT};transport=ws`,
      });
      assert.equal(res.status, 200);
      await fx.registrar.settled();
      assert.equal((await findEndUser(fx.db, acct.account.id, acct.user.id))?.registration_state, 'registered');
    } finally {
      await browser.close(); // the tab is closed
    }
    for (let i = 0; i < 100 && fx.registrar.location.isRegistered(acct.account.id, '1001'); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(fx.registrar.location.isRegistered(acct.account.id, '1001'), false);
    const contact = 'sip:tab1@tab1.invalid;transport=ws';
    assert.equal(fx.registrar.location.get(acct.account.id, '1001', contact), undefined, 'the binding itself is gone');
    await fx.registrar.settled();
    assert.equal((await findEndUser(fx.db, acct.account.id, acct.user.id))?.registration_state, 'unregistered');
  });

  it('Bearer: a forged token gets 401 invalid_token; a revoked one 403 and AUTH.0401; another AOR 403', async () => {
    const forged = await register({ headers: { Authorization: `Bearer ${acct.token.slice(0, -3)}abc` } });
    assert.equal(forged.status, 401);
    assert.match(forged.headers.get('www-authenticate') ?? '', /^Bearer realm=".*", error="invalid_token"$/);
    const other = await register({ headers: { Authorization: `Bearer ${acct.token}` }, to: aor('1002') });
    assert.equal(other.status, 403);
    await revokePhoneToken(fx.db, acct.account.id, acct.tokenId);
    const revoked = await register({ tcp: true, headers: { Authorization: `Bearer ${acct.token}` } });
    assert.equal(revoked.status, 403);
    await fx.registrar.settled();
    assert.deepEqual(codes(), ['AUTH.0401']);
  });

  it('INVITEs from phones are challenged with 407 and authenticated by the same token', async () => {
    let seen: unknown;
    fx.app.onInvite(async (_req, srv, origin) => {
      seen = origin;
      srv.send(486, 'Busy Here');
    });
    const call = phone.createUAC(`sip:1002@${domainOf(acct.account.id)}`, {
      from: aor(),
      auth: { username: '1001', password: acct.token },
      proxy: PROXY,
      localSdp: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n',
    });
    await assert.rejects(call, (e: { status?: number }) => e.status === 486);
    assert.deepEqual(seen, {
      kind: 'end-user',
      identity: {
        accountId: acct.account.id,
        endUserId: acct.user.id,
        extension: '1001',
        tokenId: acct.tokenId,
        maxConcurrent: 1,
      },
    });
  });

  it('an INVITE without credentials gets 407; Bearer INVITEs pass; a revoked token gets 403 and AUTH.0401', async () => {
    let calls = 0;
    fx.app.onInvite(async (_req, srv) => {
      calls++;
      srv.send(486, 'Busy Here');
    });
    const sdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n';
    const invite = (headers?: Record<string, string>) =>
      phone.createUAC(`sip:1002@${domainOf(acct.account.id)}`, { from: aor(), proxy: PROXY, localSdp: sdp, headers });
    await assert.rejects(invite(), (e: { status?: number }) => e.status === 407);
    await assert.rejects(
      invite({ Authorization: `Bearer ${acct.token}` }),
      (e: { status?: number }) => e.status === 486,
    );
    assert.equal(calls, 1);
    await revokePhoneToken(fx.db, acct.account.id, acct.tokenId);
    await assert.rejects(
      invite({ Authorization: `Bearer ${acct.token}` }),
      (e: { status?: number }) => e.status === 403,
    );
    assert.equal(calls, 1);
    await fx.registrar.settled();
    assert.deepEqual(codes(), ['AUTH.0200', 'AUTH.0401']);
  });
});
