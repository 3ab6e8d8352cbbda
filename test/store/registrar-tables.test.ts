import assert from 'node:assert/strict';
import {
  findEndUserAnyAccount,
  findEndUserByExtension,
  insertAccount,
  insertEndUser,
  insertPhoneToken,
  phoneCredentials,
  recentPhoneTokens,
  liveRegistrations,
  markRegistrationsUnreachable,
  remoteRegistrations,
  setStoreNodeId,
  storedPath,
  storeNodeId,
  writeRegistrations,
  type RegistrationRow,
  resetRegistrationStates,
  setRegistrationState,
  updateEndUser,
  type Db,
  type EndUserRow,
} from '../../store/index.js';
import { pathNextHop } from '../../sip/index.js';
import { BOTH_DBS, postgresDb } from '../support/db.js';

/** Three tokens of the end-user, issued at 1700000000 + 0, 1, 2, created in that order (distinct created_at). */
async function threeTokens(db: Db, u: EndUserRow, maxConcurrent: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const t = await insertPhoneToken(db, {
      account_id: u.account_id,
      end_user_id: u.id,
      extension_number: u.extension_number,
      max_concurrent: maxConcurrent,
      expires_at: '2999-01-01T00:00:00.000Z',
      issued_at: 1700000000 + i,
    });
    ids.push(t.id);
    await new Promise((r) => setTimeout(r, 5));
  }
  return ids;
}

/** The store functions sip/registrar and the end-user call flow work through (end_users, phone_tokens). */
for (const kind of BOTH_DBS) {
  describe(`store: registrar tables on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('finds an end-user by extension, enabled or not, or only enabled', async () => {
      const a = await insertAccount(db, 'Ext');
      const u = await insertEndUser(db, a.id, 'e@example.com', 'E');
      await updateEndUser(db, a.id, u.id, { is_active: false });
      const found = await findEndUserByExtension(db, a.id, u.extension_number);
      assert.equal(found?.id, u.id);
      assert.equal(found?.is_active, false);
      assert.equal(await findEndUserByExtension(db, a.id, u.extension_number, { activeOnly: true }), undefined);
      await updateEndUser(db, a.id, u.id, { is_active: true });
      assert.equal((await findEndUserByExtension(db, a.id, u.extension_number, { activeOnly: true }))?.id, u.id);
      assert.equal(await findEndUserByExtension(db, '', u.extension_number), undefined);
    });

    it('writes registration states, and resets them all but the restored ones in one go', async () => {
      const a = await insertAccount(db, 'Reg');
      const u1 = await insertEndUser(db, a.id, 'r1@example.com', 'R1');
      const u2 = await insertEndUser(db, a.id, 'r2@example.com', 'R2');
      const at = '2024-01-01T00:00:00.000Z';
      await setRegistrationState(db, u1.id, 'registered', at);
      await setRegistrationState(db, u2.id, 'registered');
      const r1 = await findEndUserAnyAccount(db, u1.id);
      assert.deepEqual([r1?.registration_state, r1?.last_registered_at], ['registered', at]);
      assert.equal((await findEndUserAnyAccount(db, u2.id))?.last_registered_at, null);
      await resetRegistrationStates(db, [u2.id, u2.id]);
      assert.equal((await findEndUserAnyAccount(db, u1.id))?.registration_state, 'unregistered');
      assert.equal((await findEndUserAnyAccount(db, u2.id))?.registration_state, 'registered');
    });

    it('lists an end-user’s most recent phone tokens, newest first, bounded', async () => {
      const a = await insertAccount(db, 'Tokens');
      const u = await insertEndUser(db, a.id, 't@example.com', 'T');
      const ids = await threeTokens(db, u, 2);
      const rows = await recentPhoneTokens(db, a.id, u.id, 2);
      assert.deepEqual(
        rows.map((r) => r.id),
        [ids[2], ids[1]],
      );
      assert.equal(rows[0].issued_at, 1700000002, 'a number on both stores (bigint is a string from pg)');
      assert.equal(rows[0].max_concurrent, 2);
      assert.deepEqual(await recentPhoneTokens(db, '', '', 2), []);
    });

    it('reads an end-user and its recent tokens in one query; unknown extensions and accounts alike', async () => {
      const a = await insertAccount(db, 'Creds');
      const u = await insertEndUser(db, a.id, 'c@example.com', 'C');
      const none = await insertEndUser(db, a.id, 'n@example.com', 'N');
      await updateEndUser(db, a.id, none.id, { is_active: false });
      const ids = await threeTokens(db, u, 3);
      const c = await phoneCredentials(db, a.id, u.extension_number, 2);
      assert.equal(c.endUserId, u.id);
      assert.equal(c.isActive, true);
      assert.deepEqual(
        c.tokens.map((t) => [t.id, t.end_user_id, t.max_concurrent, t.issued_at]),
        [
          [ids[2], u.id, 3, 1700000002],
          [ids[1], u.id, 3, 1700000001],
        ],
      );
      assert.deepEqual(await phoneCredentials(db, a.id, none.extension_number, 2), {
        endUserId: none.id,
        isActive: false,
        tokens: [],
      });
      const unknown = { endUserId: undefined, isActive: false, tokens: [] };
      assert.deepEqual(await phoneCredentials(db, a.id, '9999', 2), unknown);
      assert.deepEqual(await phoneCredentials(db, '', u.extension_number, 2), unknown);
    });

    it('writes many end-users registrations in one go: states, times, kept rows replaced', async () => {
      const a = await insertAccount(db, 'Writes');
      const users = [];
      for (let i = 0; i < 75; i++) users.push(await insertEndUser(db, a.id, `w${i}@example.com`, `W${i}`));
      const far = Date.now() + 3600_000;
      const row = (id: string, contact: string): RegistrationRow => ({
        end_user_id: id,
        contact,
        account_id: a.id,
        extension: '1001',
        source_address: '127.0.0.1',
        source_port: 5060,
        flow_id: 'udp:127.0.0.1:5060',
        token_id: 't',
        call_id: 'c',
        cseq: 1,
        registered_at: 1,
        expires_at: far,
        node_id: null,
        transport: 'UDP',
        unreachable_at: null,
      });
      // 73 registered (64 + 8 + 1 in chunks), one with two contacts; one registered without a new time; one gone.
      const at = (i: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString();
      const writes = users.slice(0, 73).map((u, i) => ({
        endUserId: u.id,
        state: 'registered' as const,
        lastRegisteredAt: at(i),
        rows: i === 0 ? [row(u.id, 'sip:a@x'), row(u.id, 'sip:b@x')] : [row(u.id, 'sip:a@x')],
      }));
      await setRegistrationState(db, users[73].id, 'registered', at(99));
      await setRegistrationState(db, users[74].id, 'registered', at(98));
      await writeRegistrations(db, [
        ...writes,
        { endUserId: users[73].id, state: 'registered', rows: [row(users[73].id, 'sip:a@x')] },
        { endUserId: users[74].id, state: 'unregistered', rows: [] },
      ]);
      const got = await db('end_users').where({ account_id: a.id }).orderBy('email');
      const byId = new Map(got.map((r: any) => [r.id, r]));
      users.slice(0, 73).forEach((u, i) => {
        assert.deepEqual([byId.get(u.id).registration_state, byId.get(u.id).last_registered_at], ['registered', at(i)]);
      });
      assert.deepEqual(
        [byId.get(users[73].id).registration_state, byId.get(users[73].id).last_registered_at],
        ['registered', at(99)],
      );
      assert.equal(byId.get(users[74].id).registration_state, 'unregistered');
      const live = (await liveRegistrations(db, Date.now())).filter((r) => r.account_id === a.id);
      assert.equal(live.length, 0, 'token t does not exist: liveRegistrations joins tokens');
      assert.equal((await db('registrations').where({ account_id: a.id })).length, 75);
      // Written again with fewer contacts: the old rows are replaced, not added to.
      await writeRegistrations(db, [{ ...writes[0]!, rows: [row(users[0].id, 'sip:b@x')] }]);
      assert.deepEqual(
        (await db('registrations').where({ end_user_id: users[0].id })).map((r: any) => r.contact),
        ['sip:b@x'],
      );
    });

    it('writes a refresh in place: the expiry and request move, a missing row is written, the rest is kept', async () => {
      const a = await insertAccount(db, 'Refresh');
      const u = await insertEndUser(db, a.id, 'r@example.com', 'R');
      const v = await insertEndUser(db, a.id, 'r2@example.com', 'R2');
      const row = (id: string, contact: string, cseq: number, expires: number): RegistrationRow => ({
        end_user_id: id,
        contact,
        account_id: a.id,
        extension: '1001',
        source_address: '127.0.0.1',
        source_port: 5060,
        flow_id: 'udp:127.0.0.1:5060',
        token_id: 't',
        call_id: `c${cseq}`,
        cseq,
        registered_at: cseq,
        expires_at: expires,
        node_id: storeNodeId() ?? null,
        transport: 'UDP',
        unreachable_at: null,
      });
      const far = Date.now() + 3600_000;
      await writeRegistrations(db, [
        { endUserId: u.id, state: 'registered', rows: [row(u.id, 'sip:a@x', 1, far), row(u.id, 'sip:b@x', 1, far)] },
      ]);
      const at = new Date(Date.UTC(2024, 0, 2)).toISOString();
      await writeRegistrations(db, [
        {
          endUserId: u.id,
          state: 'registered',
          lastRegisteredAt: at,
          rows: [row(u.id, 'sip:a@x', 2, far + 1000), row(u.id, 'sip:b@x', 1, far)],
          refresh: true,
        },
        // Its earlier write was lost: the refresh writes the row.
        { endUserId: v.id, state: 'registered', rows: [row(v.id, 'sip:c@x', 5, far)], refresh: true },
      ]);
      const got = await db('registrations').where({ account_id: a.id }).orderBy('contact');
      assert.deepEqual(
        got.map((r: any) => [r.contact, r.call_id, Number(r.cseq), Number(r.registered_at), Number(r.expires_at)]),
        [
          ['sip:a@x', 'c2', 2, 2, far + 1000],
          ['sip:b@x', 'c1', 1, 1, far],
          ['sip:c@x', 'c5', 5, 5, far],
        ],
      );
      const ru = await db('end_users').where({ id: u.id }).first();
      const rv = await db('end_users').where({ id: v.id }).first();
      assert.deepEqual(
        [ru.registration_state, ru.last_registered_at, rv.registration_state],
        ['registered', at, 'registered'],
      );
    });
  });
}

/** Nodes sharing PostgreSQL: each writes its own bindings; a gone node's stream bindings become unreachable. */
describe('store: registrations of several nodes (postgres)', function () {
  this.timeout(30_000);
  let db: Db;
  const before0 = storeNodeId();
  before(async () => {
    db = await postgresDb.open();
  });
  after(async () => {
    setStoreNodeId(before0);
    await db?.destroy();
  });

  it("a node's write leaves the other node's rows; a contact registered again moves; unreachable when gone", async () => {
    const a = await insertAccount(db, 'Nodes');
    const u = await insertEndUser(db, a.id, 'n@example.com', 'N');
    const [token] = await threeTokens(db, u, 1);
    const row = (contact: string, transport: string): RegistrationRow => ({
      end_user_id: u.id,
      contact,
      account_id: a.id,
      extension: u.extension_number,
      source_address: '192.0.2.1',
      source_port: 5060,
      flow_id: 'f',
      token_id: token!,
      call_id: 'c',
      cseq: 1,
      registered_at: 1,
      expires_at: Date.now() + 3600_000,
      node_id: storeNodeId(),
      transport,
      unreachable_at: null,
    });
    setStoreNodeId('node-1');
    await writeRegistrations(db, [
      { endUserId: u.id, state: 'registered', rows: [row('sip:udp@x', 'UDP'), row('sip:tcp@x', 'TCP')] },
    ]);
    setStoreNodeId('node-2');
    // Node 2 sees node 1's UDP binding (it reaches it itself), not the TCP one.
    assert.deepEqual(
      (await remoteRegistrations(db, a.id, u.extension_number, Date.now())).map((r) => r.contact),
      ['sip:udp@x'],
    );
    // Node 2 has none of its own: its write leaves node 1's rows, and the end-user registered.
    await writeRegistrations(db, [{ endUserId: u.id, state: 'unregistered', rows: [] }]);
    assert.equal((await db('registrations').where({ end_user_id: u.id })).length, 2);
    assert.equal((await db('end_users').where({ id: u.id }).first()).registration_state, 'registered');
    // The UDP phone registers again through node 2: its contact moves there.
    await writeRegistrations(db, [{ endUserId: u.id, state: 'registered', rows: [row('sip:udp@x', 'UDP')] }]);
    const rows = await db('registrations').where({ end_user_id: u.id }).orderBy('contact');
    assert.deepEqual(
      rows.map((r: any) => [r.contact, r.node_id]),
      [
        ['sip:tcp@x', 'node-1'],
        ['sip:udp@x', 'node-2'],
      ],
    );
    // Node 1's refresh of the UDP contact (its binding unchanged there) takes it back, in place.
    setStoreNodeId('node-1');
    await writeRegistrations(db, [
      {
        endUserId: u.id,
        state: 'registered',
        rows: [{ ...row('sip:udp@x', 'UDP'), cseq: 2, node_id: 'node-1' }],
        refresh: true,
      },
    ]);
    assert.deepEqual(
      (await db('registrations').where({ end_user_id: u.id }).orderBy('contact')).map((r: any) => [
        r.contact,
        r.node_id,
        Number(r.cseq),
      ]),
      [
        ['sip:tcp@x', 'node-1', 1],
        ['sip:udp@x', 'node-1', 2],
      ],
    );
    setStoreNodeId('node-2');
    await writeRegistrations(db, [
      {
        endUserId: u.id,
        state: 'registered',
        rows: [{ ...row('sip:udp@x', 'UDP'), node_id: 'node-2' }],
        refresh: true,
      },
    ]);
    assert.equal(await markRegistrationsUnreachable(db, 'node-1', new Date().toISOString()), 1);
    assert.ok((await db('registrations').where({ contact: 'sip:tcp@x' }).first()).unreachable_at);
    assert.equal((await db('end_users').where({ id: u.id }).first()).registration_state, 'registered', 'UDP on 2');
  });

  it('a binding with a Path is reached from any node, over any transport, and outlives its node', async () => {
    const a = await insertAccount(db, 'Front');
    const u = await insertEndUser(db, a.id, 'f@example.com', 'F');
    const [token] = await threeTokens(db, u, 1);
    setStoreNodeId('node-1');
    const path = ['<sip:192.0.2.9:5060;transport=tcp;lr;received=sip:198.51.100.7:40001%3Btransport%3Dtcp>'];
    await writeRegistrations(db, [
      {
        endUserId: u.id,
        state: 'registered',
        rows: [
          {
            end_user_id: u.id,
            contact: 'sip:front@x',
            account_id: a.id,
            extension: u.extension_number,
            source_address: '192.0.2.9',
            source_port: 41234, // the front's end of its TCP connection to node 1
            flow_id: 'f',
            token_id: token!,
            call_id: 'c',
            cseq: 1,
            registered_at: 1,
            expires_at: Date.now() + 3600_000,
            node_id: 'node-1',
            transport: 'TCP',
            unreachable_at: null,
            path: JSON.stringify(path),
          },
        ],
      },
    ]);
    setStoreNodeId('node-2');
    const seen = await remoteRegistrations(db, a.id, u.extension_number, Date.now());
    assert.deepEqual(
      seen.map((r) => [r.contact, r.path ? storedPath(r.path) : null]),
      [['sip:front@x', path]],
    );
    assert.deepEqual(pathNextHop(storedPath(seen[0]!.path!)!), {
      transport: 'TCP',
      host: '192.0.2.9',
      port: 5060,
      flowId: undefined,
    });
    assert.equal(await markRegistrationsUnreachable(db, 'node-1', new Date().toISOString()), 0);
    assert.equal((await remoteRegistrations(db, a.id, u.extension_number, Date.now())).length, 1);
  });
});
