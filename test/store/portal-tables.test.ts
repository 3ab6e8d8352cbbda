import assert from 'node:assert/strict';
import {
  advanceTotpStep,
  enableWebhookRoute,
  findApiKeyByHash,
  findPortalUserRow,
  findPortalUserRowByEmail,
  insertAccount,
  insertApiKey,
  insertPortalUser,
  listCallEvents,
  listWebhookRoutes,
  revokeApiKeysNamed,
  sha256Hex,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** The store functions the portal (web/) reads and writes through: portal users, call events, webhook routes. */
for (const kind of BOTH_DBS) {
  describe(`store: portal tables on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('stores a portal user and advances its one-time-code step only forwards', async () => {
      const a = await insertAccount(db, 'Portal');
      const row = {
        id: '00000000-0000-4000-8000-000000000001',
        account_id: a.id,
        email: 'p@example.com',
        password_hash: 'scrypt$x',
        totp_secret: 'SECRET',
        totp_enrolled: false,
        totp_last_step: 0,
        created_at: new Date().toISOString(),
      };
      await insertPortalUser(db, row);
      assert.deepEqual(await findPortalUserRowByEmail(db, 'p@example.com'), row);
      assert.deepEqual(await findPortalUserRow(db, row.id), row);
      assert.equal(await findPortalUserRowByEmail(db, 'q@example.com'), undefined);
      assert.equal(await advanceTotpStep(db, row.id, 5), true);
      assert.equal(await advanceTotpStep(db, row.id, 5), false, 'the same step twice');
      assert.equal(await advanceTotpStep(db, row.id, 4), false, 'an earlier step');
      const after = await findPortalUserRow(db, row.id);
      assert.equal(after?.totp_last_step, 5);
      assert.equal(after?.totp_enrolled, true);
    });

    it('lists a call’s events in time order, only for its account', async () => {
      const a = await insertAccount(db, 'Events');
      const b = await insertAccount(db, 'Other');
      const ev = (id: string, account: string, at: string) => ({
        id,
        account_id: account,
        call_id: 'c1',
        code: 'CALL.0100',
        event: 'call.initiated',
        data: `{"n":"${id}"}`,
        created_at: at,
      });
      await db('call_events').insert([
        ev('e2', a.id, '2024-01-01T00:00:02.000Z'),
        ev('e1', a.id, '2024-01-01T00:00:01.000Z'),
        ev('e3', b.id, '2024-01-01T00:00:00.000Z'),
      ]);
      const rows = await listCallEvents(db, a.id, 'c1');
      assert.deepEqual(
        rows.map((r) => r.data),
        ['{"n":"e1"}', '{"n":"e2"}'],
      );
      assert.deepEqual(Object.keys(rows[0]).sort(), ['code', 'created_at', 'data', 'event']);
    });

    it('lists webhook routes by URL and re-enables a disabled one', async () => {
      const a = await insertAccount(db, 'Routes');
      const at = '2024-01-01T00:00:00.000Z';
      await db('webhook_routes').insert([
        {
          account_id: a.id,
          url: 'https://b.example/',
          consecutive_failures: 9,
          disabled: true,
          disabled_at: at,
          updated_at: at,
        },
        { account_id: a.id, url: 'https://a.example/', consecutive_failures: 0, disabled: false, updated_at: at },
      ]);
      const before = await listWebhookRoutes(db, a.id);
      assert.deepEqual(
        before.map((r) => [r.url, r.disabled, r.consecutive_failures, r.disabled_at]),
        [
          ['https://a.example/', false, 0, null],
          ['https://b.example/', true, 9, at],
        ],
      );
      assert.equal(await enableWebhookRoute(db, a.id, { route: 'status', url: 'https://b.example/' }, at), true);
      assert.equal(await enableWebhookRoute(db, a.id, { route: 'status', url: 'https://none.example/' }, at), false);
      const b = (await listWebhookRoutes(db, a.id))[1];
      assert.deepEqual([b.disabled, b.consecutive_failures, b.disabled_at], [false, 0, null]);
    });

    it('revokes every active key of a name, leaving other names alone', async () => {
      const a = await insertAccount(db, 'Sessions');
      const s = await insertApiKey(db, a.id, 'portal-session');
      const k = await insertApiKey(db, a.id, 'ci');
      assert.equal(await revokeApiKeysNamed(db, 'portal-session', new Date().toISOString()), 1);
      assert.equal((await findApiKeyByHash(db, sha256Hex(s.key)))?.is_active, false);
      assert.equal((await findApiKeyByHash(db, sha256Hex(k.key)))?.is_active, true);
    });
  });
}
