/**
 * The registrar and the real REST API agree on phone tokens: a token minted by POST /api/phone-tokens/mint
 * registers by digest (whole and short form) and by Bearer, the end-user's registration_state and
 * last_registered_at show through GET /api/users/, and POST /api/phone-tokens/revoke refuses the next REGISTER.
 * This guards the registrar's rebuilding of the JWT from the stored claims (sip/registrar-credentials.ts) against
 * any change in how the API mints.
 */
import assert from 'node:assert/strict';
import { UserAgent, type SipResponse } from '../../sip/stack/index.js';
import { shortPassword } from '../../sip/registrar-credentials.js';
import { ApiHarness, type Tenant } from '../api/harness.js';
import { BOTH_DBS } from '../support/db.js';
import { startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';

BOTH_DBS.forEach((kind) =>
  describe(`sip/registrar with tokens minted by the REST API (${kind.name})`, function () {
    const SIP_PORT = nextPort(); // one switch per store, each on its own ports
    const PHONE_PORT = nextPort();
    this.timeout(20000);
    let api: ApiHarness;
    let fx: RegistrarFixture;
    let phone: UserAgent;
    let tenant: Tenant;

    before(async () => {
      api = await ApiHarness.start(kind);
      fx = await startRegistrar({ port: SIP_PORT, db: api.db, secret: api.secret });
      phone = new UserAgent({ logger: quietLogger });
      await phone.listen({ udp: { host: '127.0.0.1', port: PHONE_PORT } });
      tenant = await api.tenant('phones');
    });
    after(async () => {
      await phone?.close();
      await fx?.close();
      await api?.stop();
    });

    const register = (ext: string, auth: { password?: string; bearer?: string }): Promise<SipResponse> => {
      const dom = `${tenant.accountId}.sip.simu.test`;
      return phone.request(`sip:${dom}`, {
        method: 'REGISTER',
        to: `<sip:${ext}@${dom}>`,
        from: `<sip:${ext}@${dom}>`,
        headers: {
          Contact: `<sip:${ext}@127.0.0.1:${PHONE_PORT}>`,
          ...(auth.bearer ? { Authorization: `Bearer ${auth.bearer}` } : {}),
        },
        auth: auth.password ? { username: ext, password: auth.password } : undefined,
        proxy: `127.0.0.1:${SIP_PORT}`,
      });
    };

    it('mint, register (digest, short form, Bearer), see the state in the API, revoke, refused', async () => {
      const user = await api.req('POST', '/api/users/create', {
        key: tenant.key,
        body: { email: 'desk@example.com', display_name: 'Desk' },
      });
      assert.equal(user.status, 201, user.text);
      const ext: string = user.body.extension_number;
      const mint = await api.req('POST', '/api/phone-tokens/mint', { key: tenant.key, body: { uuid: user.body.uuid } });
      assert.equal(mint.status, 200, mint.text);
      const token: string = mint.body.token;

      assert.equal((await register(ext, { password: token })).status, 200);
      assert.equal((await register(ext, { password: shortPassword(token) })).status, 200);
      assert.equal((await register(ext, { bearer: token })).status, 200);
      await fx.registrar.settled();
      const listed = await api.req('GET', '/api/users/', { key: tenant.key });
      const me = listed.body.find((u: { uuid: string }) => u.uuid === user.body.uuid);
      assert.equal(me.registration_state, 'registered');
      assert.ok(me.last_registered_at);

      const revoke = await api.req('POST', '/api/phone-tokens/revoke', {
        key: tenant.key,
        body: { uuid: mint.body.phone_token.uuid },
      });
      assert.equal(revoke.status, 200, revoke.text);
      assert.equal((await register(ext, { password: token })).status, 403);
      assert.equal((await register(ext, { bearer: token })).status, 403);
      await fx.registrar.settled();
      assert.deepEqual(
        fx.events.map((e) => e.code),
        ['AUTH.0200', 'AUTH.0401', 'AUTH.0401'],
      );
    });
  }),
);
