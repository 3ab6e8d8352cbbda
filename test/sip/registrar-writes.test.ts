/**
 * What a REGISTER costs the store (issue 20): one read to authenticate it; a refresh of the same contact from the
 * same place waits to be written with others (and is written by settled() and close(), so a restart restores the
 * refreshed expiry); a change of where the phone is reached is written at once; phones registering together share
 * one transaction.
 */
import assert from 'node:assert/strict';
import { ManualClock, UserAgent, type SipResponse } from '../../sip/stack/index.js';
import { accountWithPhone, startRegistrar, type RegistrarFixture } from './registrar-fixture.js';
import { nextPort, nextPorts } from '../support/ports.js';
import { quietLogger } from '../support/logger.js';
import { eventually } from '../support/wait.js';
import { sqliteDb } from '../support/db.js';
import type { Db } from '../../store/index.js';

const domainOf = (accountId: string) => `${accountId}.sip.simu.test`;

describe('sip/registrar: store work per REGISTER', function () {
  this.timeout(20000);
  const SIP_PORT = nextPorts(2); // the registrar, then its restart
  const PHONE_PORT = nextPort();
  const MOVED_PORT = nextPort();
  let db: Db;
  let fx: RegistrarFixture | undefined;
  let clock: ManualClock;
  const phones: UserAgent[] = [];
  let sql: string[] = [];
  let registrarPort = SIP_PORT; // + 1 after the restart

  before(async () => {
    clock = new ManualClock();
    clock.advance(Date.now());
    db = await sqliteDb.open();
    fx = await startRegistrar({ port: SIP_PORT, clock, db });
    db.on('query', (q: { sql: string }) => sql.push(q.sql));
    for (const port of [PHONE_PORT, MOVED_PORT]) {
      const ua = new UserAgent({ logger: quietLogger });
      await ua.listen({ udp: { host: '127.0.0.1', port } });
      phones.push(ua);
    }
  });
  after(async () => {
    for (const p of phones) await p.close();
    await fx?.close();
    await db?.destroy();
  });

  type Phone = Awaited<ReturnType<typeof accountWithPhone>>;
  function register(p: Phone, opts: { from?: UserAgent } = {}) {
    const aor = `<sip:1001@${domainOf(p.account.id)}>`;
    return (opts.from ?? phones[0]!).request(`sip:${domainOf(p.account.id)}`, {
      method: 'REGISTER',
      to: aor,
      from: aor,
      headers: { Contact: `<sip:1001@127.0.0.1:${PHONE_PORT}>` },
      auth: { username: '1001', password: p.token },
      proxy: `127.0.0.1:${registrarPort}`,
    });
  }
  const writes = (table: string) =>
    sql.filter((s) => new RegExp(`^(insert into|update|delete from) .${table}.`, 'i').test(s));
  const stored = (p: Phone) => fx!.db('registrations').where({ end_user_id: p.user.id });

  it('an authenticated REGISTER reads the store once (end-user and tokens together)', async () => {
    const p = await accountWithPhone(fx!.db, 'reads');
    sql = [];
    assert.equal((await register(p)).status, 200);
    const reads = sql.filter((s) => /^select/i.test(s) && /end_users|phone_tokens/.test(s));
    assert.equal(reads.length, 1, reads.join('\n'));
  });

  it('a refresh that only moves the expiry waits; settled() writes it; a restart restores the refreshed expiry', async () => {
    const p = await accountWithPhone(fx!.db, 'refresh');
    assert.equal((await register(p)).status, 200);
    await fx!.registrar.settled();
    const [first] = await stored(p);
    assert.ok(first);
    sql = [];
    let last: SipResponse | undefined;
    for (let i = 0; i < 5; i++) {
      clock.advance(100); // within the registrar's refreshWriteDelayMs (1 s)
      last = await register(p);
      assert.equal(last.status, 200);
    }
    assert.deepEqual([...writes('registrations'), ...writes('end_users')], [], 'nothing written while refreshes wait');
    const [live] = fx!.registrar.location.lookup(p.account.id, '1001');
    assert.equal(live!.expiresAt, Number(first!.expires_at) + 500);

    await fx!.registrar.settled();
    const [row] = await stored(p);
    assert.equal(Number(row!.expires_at), live!.expiresAt);
    assert.equal(writes('registrations').filter((s) => /^insert/i.test(s)).length, 1, 'one write for five refreshes');
    const u = await fx!.db('end_users').where({ id: p.user.id }).first();
    assert.equal(u.last_registered_at, new Date(clock.now()).toISOString());

    // Refreshed once more, then the registrar stops: close() writes what waits, the next one restores it.
    clock.advance(100);
    assert.equal((await register(p)).status, 200);
    const expected = fx!.registrar.location.lookup(p.account.id, '1001')[0]!.expiresAt;
    await fx!.close();
    registrarPort = SIP_PORT + 1;
    fx = await startRegistrar({ port: registrarPort, clock, db });
    assert.equal(fx.registrar.location.lookup(p.account.id, '1001')[0]?.expiresAt, expected);
  });

  it('the same contact from another source port is written at once, without waiting', async () => {
    const p = await accountWithPhone(fx!.db, 'moved');
    assert.equal((await register(p)).status, 200);
    await fx!.registrar.settled();
    assert.equal((await register(p, { from: phones[1] })).status, 200); // the NAT binding moved
    const row = await eventually(
      async () => (await stored(p)).find((r) => Number(r.source_port) === MOVED_PORT),
      'the moved binding in the store',
      3000,
    );
    assert.equal(row.contact, `sip:1001@127.0.0.1:${PHONE_PORT}`);
  });

  it('phones registering together share transactions (group commit)', async () => {
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => accountWithPhone(fx!.db, `together-${i}`)));
    sql = [];
    const answers = await Promise.all(many.map((p) => register(p)));
    assert.deepEqual(
      answers.map((r) => r.status),
      many.map(() => 200),
    );
    await fx!.registrar.settled();
    const begins = sql.filter((s) => /^begin/i.test(s)).length;
    assert.ok(begins > 0 && begins <= 5, `${begins} transactions for 20 registrations`);
    assert.equal(
      (
        await fx!.db('registrations').whereIn(
          'end_user_id',
          many.map((p) => p.user.id),
        )
      ).length,
      20,
    );
  });
});
