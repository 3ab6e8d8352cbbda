/**
 * A restart of the switch keeps UDP phones reachable: their registrations are kept in the store and restored by
 * the next registrar (not if the token was revoked meanwhile), while stream bindings, which die with their
 * connection, are not. On both stores.
 */
import assert from 'node:assert/strict';
import { UserAgent } from '../../sip/stack/index.js';
import { findEndUser, revokePhoneToken, type Db } from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';
import { accountWithPhone, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort, nextPorts } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';

const domainOf = (accountId: string) => `${accountId}.sip.simu.test`;

BOTH_DBS.forEach((kind) =>
  describe(`sip/registrar across a restart (${kind.name})`, function () {
    this.timeout(20000);
    const SIP_PORT = nextPorts(2); // before the restart, then + 1 after it
    const PHONE_PORT = nextPort();
    let db: Db;
    let fx: RegistrarFixture | undefined;
    let phone: UserAgent;

    before(async () => {
      db = await kind.open();
      phone = new UserAgent({ logger: quietLogger });
      await phone.listen({
        udp: { host: '127.0.0.1', port: PHONE_PORT },
        tcp: { host: '127.0.0.1', port: PHONE_PORT },
      });
    });
    after(async () => {
      await phone?.close();
      await fx?.close();
      await db?.destroy();
    });

    async function register(p: Awaited<ReturnType<typeof accountWithPhone>>, port: number, tcp = false) {
      const aor = `<sip:1001@${domainOf(p.account.id)}>`;
      const res = await phone.request(`sip:${domainOf(p.account.id)}`, {
        method: 'REGISTER',
        to: aor,
        from: aor,
        headers: {
          Contact: `<sip:1001@127.0.0.1:${PHONE_PORT}${tcp ? ';transport=tcp' : ''}>`,
          Authorization: `Bearer ${p.token}`,
        },
        proxy: `127.0.0.1:${port}${tcp ? ';transport=tcp' : ''}`,
      });
      assert.equal(res.status, 200);
    }

    it('restores live UDP bindings with their expiry; drops revoked, stream and expired ones; states follow', async () => {
      fx = await startRegistrar({ port: SIP_PORT, db });
      const kept = await accountWithPhone(db, 'kept');
      const revoked = await accountWithPhone(db, 'revoked');
      const overTcp = await accountWithPhone(db, 'tcp');
      await register(kept, SIP_PORT);
      await register(revoked, SIP_PORT);
      await register(overTcp, SIP_PORT, true);
      await fx.registrar.settled();
      const [before] = fx.registrar.location.lookup(kept.account.id, '1001');
      await fx.close();
      fx = undefined;

      await revokePhoneToken(db, revoked.account.id, revoked.tokenId); // while the switch is down
      const lapsed = await accountWithPhone(db, 'lapsed'); // a binding that expired while the switch was down
      await db('registrations').insert({
        end_user_id: lapsed.user.id,
        contact: 'sip:1001@127.0.0.1:5999',
        account_id: lapsed.account.id,
        extension: '1001',
        source_address: '127.0.0.1',
        source_port: 5999,
        flow_id: 'udp:127.0.0.1:5999',
        token_id: lapsed.tokenId,
        call_id: 'c1',
        cseq: 1,
        registered_at: Date.now() - 7200_000,
        expires_at: Date.now() - 1000,
      });
      fx = await startRegistrar({ port: SIP_PORT + 1, db });
      const [after] = fx.registrar.location.lookup(kept.account.id, '1001');
      assert.ok(after, 'the UDP phone is reachable again without re-registering');
      assert.equal(after.contact, before.contact);
      assert.equal(after.sourcePort, PHONE_PORT);
      assert.equal(after.expiresAt, before.expiresAt);
      assert.equal(after.callId, before.callId, 'a refresh with the same Call-ID and a higher CSeq still matches');
      assert.equal(fx.registrar.location.isRegistered(revoked.account.id, '1001'), false);
      assert.equal(fx.registrar.location.isRegistered(overTcp.account.id, '1001'), false);
      assert.equal(fx.registrar.location.isRegistered(lapsed.account.id, '1001'), false);
      const state = async (p: typeof kept) => (await findEndUser(db, p.account.id, p.user.id))?.registration_state;
      assert.equal(await state(kept), 'registered');
      assert.equal(await state(revoked), 'unregistered');
      assert.equal(await state(overTcp), 'unregistered');
      const rows = await db('registrations').select('end_user_id');
      assert.deepEqual(
        rows.map((r: { end_user_id: string }) => r.end_user_id),
        [kept.user.id],
      );
    });

    it('an unregister (Expires: 0) removes the kept row too', async () => {
      const p = await accountWithPhone(db, 'leaver');
      await register(p, SIP_PORT + 1);
      await fx!.registrar.settled();
      assert.equal((await db('registrations').where({ end_user_id: p.user.id })).length, 1);
      const aor = `<sip:1001@${domainOf(p.account.id)}>`;
      const res = await phone.request(`sip:${domainOf(p.account.id)}`, {
        method: 'REGISTER',
        to: aor,
        from: aor,
        headers: { Contact: '*', Expires: '0', Authorization: `Bearer ${p.token}` },
        proxy: `127.0.0.1:${SIP_PORT + 1}`,
      });
      assert.equal(res.status, 200);
      await fx!.registrar.settled();
      assert.equal((await db('registrations').where({ end_user_id: p.user.id })).length, 0);
    });
  }),
);
