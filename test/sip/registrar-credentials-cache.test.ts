/**
 * The registrar answers a phone's digest from credentials it remembers (issue 20: a re-REGISTER costs no store
 * read), and forgets them at once when this process writes a token or an end-user: a revoked token, a disabled or
 * deleted end-user stop registering at the next REGISTER. A token minted by another process works at once (a digest
 * that matches nothing remembered is checked against the store again); one revoked by another process stops at the
 * registrar's next sweep.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { ManualClock, UserAgent } from '../../sip/stack/index.js';
import { accountWithPhone, mintPhoneToken, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';
import { sqliteDb } from '../support/db.js';
import { deleteEndUser, openDb, revokePhoneToken, updateEndUser, type Db } from '../../store/index.js';

const domainOf = (accountId: string) => `${accountId}.sip.simu.test`;

describe('sip/registrar: credentials remembered, forgotten on writes', function () {
  this.timeout(20000);
  const SIP_PORT = nextPort();
  const PHONE_PORT = nextPort();
  let db: Db;
  /** The same SQLite file through another knex instance: writes this registrar's store does not see (another process). */
  let other: Db;
  let fx: RegistrarFixture | undefined;
  let phone: UserAgent;
  let sql: string[] = [];
  const clock = new ManualClock(); // no sweep unless a test runs it or moves this clock

  before(async () => {
    clock.advance(Date.now());
    db = await sqliteDb.open();
    const file = (db.client.config.connection as { filename: string }).filename;
    other = openDb({ databaseUrl: '', dataDir: path.dirname(file) });
    fx = await startRegistrar({ port: SIP_PORT, clock, db });
    db.on('query', (q: { sql: string }) => sql.push(q.sql));
    phone = new UserAgent({ logger: quietLogger });
    await phone.listen({ udp: { host: '127.0.0.1', port: PHONE_PORT } });
  });
  after(async () => {
    await phone?.close();
    await fx?.close();
    await other?.destroy();
    await db?.destroy();
  });

  type Phone = Awaited<ReturnType<typeof accountWithPhone>>;
  async function register(p: Phone, password = p.token, headers: Record<string, string> = {}): Promise<number> {
    const aor = `<sip:1001@${domainOf(p.account.id)}>`;
    const res = await phone.request(`sip:${domainOf(p.account.id)}`, {
      method: 'REGISTER',
      to: aor,
      from: aor,
      headers: { Contact: `<sip:1001@127.0.0.1:${PHONE_PORT}>`, ...headers },
      auth: { username: '1001', password },
      proxy: `127.0.0.1:${SIP_PORT}`,
    });
    return res.status;
  }
  const credentialReads = () => sql.filter((s) => /^select/i.test(s) && /phone_tokens/.test(s));

  it('a re-REGISTER reads no credentials from the store (the registration writes between do not forget them)', async () => {
    const p = await accountWithPhone(db, 'again');
    sql = [];
    assert.equal(await register(p), 200);
    assert.equal(credentialReads().length, 1);
    await fx!.registrar.settled(); // end_users.registration_state written
    sql = [];
    for (let i = 0; i < 3; i++) assert.equal(await register(p), 200);
    assert.deepEqual(credentialReads(), []);
  });

  it('a registered phone is remembered for its registration interval; credentials read for a failure only for 60 s', async () => {
    const registered = await accountWithPhone(db, 'interval');
    const failed = await accountWithPhone(db, 'interval-failed');
    assert.equal(await register(registered, registered.token, { Expires: '3600' }), 200);
    assert.equal(await register(failed, 'not-the-token'), 401);
    await fx!.registrar.settled();
    clock.advance(61_000); // the registrar's clock (sweeps run as it passes; nothing was revoked)
    await fx!.registrar.settled();
    sql = [];
    assert.equal(await register(failed), 200);
    assert.equal(credentialReads().length, 1, 'read again: what a failure read is kept 60 s');
    await fx!.registrar.settled();
    clock.advance(30 * 60_000);
    await fx!.registrar.settled();
    sql = [];
    assert.equal(await register(registered, registered.token, { Expires: '3600' }), 200);
    assert.deepEqual(credentialReads(), [], '30 min later, within its 3600 s: nothing read');
  });

  it('a token revoked by another process is refused after the next sweep, also once its phone unregistered', async () => {
    const p = await accountWithPhone(db, 'revoked-unbound');
    assert.equal(await register(p), 200);
    assert.equal(await register(p, p.token, { Expires: '0' }), 200);
    assert.deepEqual(fx!.registrar.location.lookup(p.account.id, '1001'), [], 'no binding left');
    assert.ok(await revokePhoneToken(other, p.account.id, p.tokenId));
    fx!.registrar.sweep();
    await fx!.registrar.settled();
    assert.equal(await register(p), 403);
  });

  it('a token revoked in this process is refused at the next REGISTER', async () => {
    const p = await accountWithPhone(db, 'revoked');
    assert.equal(await register(p), 200);
    assert.ok(await revokePhoneToken(db, p.account.id, p.tokenId));
    assert.equal(await register(p), 403);
  });

  it('an end-user disabled, or deleted, in this process stops registering at the next REGISTER', async () => {
    const p = await accountWithPhone(db, 'disabled');
    assert.equal(await register(p), 200);
    await updateEndUser(db, p.account.id, p.user.id, { is_active: false });
    assert.equal(await register(p), 403);
    await updateEndUser(db, p.account.id, p.user.id, { is_active: true });
    assert.equal(await register(p), 200);
    assert.ok(await deleteEndUser(db, p.account.id, p.user.id));
    assert.equal(await register(p), 401); // challenged again: no such user any more
  });

  it('a token minted by another process works at once', async () => {
    const p = await accountWithPhone(db, 'minted-elsewhere');
    assert.equal(await register(p), 200);
    const fresh = await mintPhoneToken(other, p.user);
    assert.equal(await register(p, fresh.token), 200);
  });

  it('a token revoked by another process is refused after the next sweep', async () => {
    const p = await accountWithPhone(db, 'revoked-elsewhere');
    assert.equal(await register(p), 200);
    assert.ok(await revokePhoneToken(other, p.account.id, p.tokenId));
    fx!.registrar.sweep();
    await fx!.registrar.settled();
    assert.equal(await register(p), 403);
  });

  it('an end-user deleted by another process is refused after the next sweep, and its binding dropped', async () => {
    const p = await accountWithPhone(db, 'deleted-elsewhere');
    assert.equal(await register(p), 200);
    assert.ok(await deleteEndUser(other, p.account.id, p.user.id));
    fx!.registrar.sweep();
    await fx!.registrar.settled();
    assert.deepEqual(fx!.registrar.location.lookup(p.account.id, '1001'), []);
    assert.equal(await register(p), 401); // challenged again: no such user any more
  });
});
