/**
 * The registrar's store writes (sip/registration-writer.ts): a large batch, such as a second's refreshes at
 * 2,000 REGISTER/s, is written a slice at a time so that the REGISTERs arriving meanwhile are not held up for the
 * whole batch.
 */
import assert from 'node:assert/strict';
import { RegistrationWriter } from '../../sip/registration-writer.js';
import { LocationService } from '../../sip/location.js';
import { systemClock } from '../../sip/stack/index.js';
import { quietLogger } from '../support/logger.js';
import { sqliteDb } from '../support/db.js';
import type { Db } from '../../store/index.js';

describe('sip/registration-writer', function () {
  this.timeout(20000);
  let db: Db;
  before(async () => {
    db = await sqliteDb.open();
  });
  after(async () => {
    await db?.destroy();
  });

  it('a batch of 1,000 end-users is written a slice at a time, the event loop turning between slices', async () => {
    const writer = new RegistrationWriter({
      db,
      location: new LocationService(),
      clock: systemClock,
      logger: quietLogger,
      refreshDelayMs: 1000,
    });
    const written = new Set<string>();
    const onQuery = (q: { sql: string; bindings?: unknown[] }) => {
      // The end-users' ids (on PostgreSQL then the node's id).
      if (/^delete from "registrations" where "end_user_id" in/i.test(q.sql))
        for (const id of q.bindings ?? []) if (String(id).startsWith('user-')) written.add(String(id));
    };
    db.on('query', onQuery);
    try {
      for (let i = 0; i < 1000; i++) {
        writer.mark({ accountId: 'a', extension: String(1000 + i), endUserId: `user-${i}` }, { urgent: true });
      }
      let turns = 0;
      let done = false;
      const spin = () => {
        if (done) return;
        turns++;
        setImmediate(spin);
      };
      setImmediate(spin);
      await writer.settled();
      done = true;
      assert.equal(written.size, 1000, 'every end-user written');
      // 1,000 in slices of 128: eight slices, seven turns of the loop between them at least.
      assert.ok(turns >= 7, `the loop turned ${turns} times during the write`);
    } finally {
      db.off('query', onQuery);
      await writer.close();
    }
  });

  it('a refresh that only moved expiries is written in place; any other change since replaces the rows', async () => {
    const location = new LocationService();
    const writer = new RegistrationWriter({ db, location, clock: systemClock, logger: quietLogger, refreshDelayMs: 0 });
    const user = { accountId: 'acct-r', extension: '2001', endUserId: 'user-refresh' };
    const binding = (cseq: number) => ({
      accountId: user.accountId,
      endUserId: user.endUserId,
      extension: user.extension,
      contact: 'sip:2001@192.0.2.9:5060',
      transport: 'UDP' as const,
      sourceAddress: '192.0.2.9',
      sourcePort: 5060,
      flowId: 'udp:192.0.2.9:5060',
      expiresAt: Date.now() + 3600_000 + cseq,
      registeredAt: Date.now(),
      tokenId: 'token-r',
      callId: 'call-r',
      cseq,
    });
    const kinds: string[] = [];
    const onQuery = (q: { sql: string }) => {
      if (/^delete from "registrations" where "end_user_id" in/i.test(q.sql)) kinds.push('replace');
      else if (/^insert into "registrations" .* on conflict/i.test(q.sql)) kinds.push('in place');
    };
    db.on('query', onQuery);
    try {
      const write = async (cseq: number, urgent: boolean[]) => {
        location.apply(user.accountId, user.extension, [binding(cseq)], [], 10);
        for (const u of urgent) writer.mark(user, { registeredAt: new Date().toISOString(), urgent: u });
        await writer.settled();
      };
      await write(1, [true]);
      await write(2, [false, false]);
      await write(3, [false, true]);
      assert.deepEqual(kinds, ['replace', 'in place', 'replace']);
      const rows = await db('registrations').where({ end_user_id: user.endUserId });
      assert.deepEqual(
        rows.map((r: any) => Number(r.cseq)),
        [3],
      );
    } finally {
      db.off('query', onQuery);
      await writer.close();
    }
  });

  it('after a failed write, the next refresh replaces the rows: a contact dropped meanwhile leaves the store', async () => {
    const location = new LocationService();
    const writer = new RegistrationWriter({ db, location, clock: systemClock, logger: quietLogger, refreshDelayMs: 0 });
    const user = { accountId: 'acct-f', extension: '2002', endUserId: 'user-failed' };
    const binding = (contact: string, cseq: number) => ({
      accountId: user.accountId,
      endUserId: user.endUserId,
      extension: user.extension,
      contact,
      transport: 'UDP' as const,
      sourceAddress: '192.0.2.10',
      sourcePort: 5060,
      flowId: 'udp:192.0.2.10:5060',
      expiresAt: Date.now() + 3600_000 + cseq,
      registeredAt: Date.now(),
      tokenId: 'token-f',
      callId: 'call-f',
      cseq,
    });
    const a = 'sip:2002@192.0.2.10:5060';
    const b = 'sip:2002@192.0.2.10:5070';
    const stored = async () =>
      (await db('registrations').where({ end_user_id: user.endUserId }).orderBy('contact')).map((r: any) => r.contact);
    // The store refuses to delete this end-user's rows while armed: one write fails, as on a store error.
    await db.raw('create table "fail_once" ("armed" integer)');
    await db.raw(
      'create trigger "fail_once_delete" before delete on "registrations" when exists (select 1 from "fail_once") ' +
        "begin select raise(abort, 'store unavailable'); end",
    );
    try {
      location.apply(user.accountId, user.extension, [binding(a, 1), binding(b, 1)], [], 10);
      writer.mark(user, { registeredAt: new Date().toISOString(), urgent: true });
      await writer.settled();
      assert.deepEqual(await stored(), [a, b]);

      // The phone unregisters b; that write fails.
      await db('fail_once').insert({ armed: 1 });
      location.apply(user.accountId, user.extension, [], [b], 10);
      writer.mark(user, { urgent: true });
      await writer.settled();
      await db('fail_once').del();
      assert.deepEqual(await stored(), [a, b], 'the failed write changed nothing');

      // A refresh of a alone: the store ends up holding what the registrar keeps.
      location.apply(user.accountId, user.extension, [binding(a, 2)], [], 10);
      writer.mark(user, { registeredAt: new Date().toISOString(), urgent: false });
      await writer.settled();
      assert.deepEqual(await stored(), [a], 'the contact the phone unregistered is gone from the store');

      // Written once since, the end-user's refreshes are in place again.
      const kinds: string[] = [];
      const onQuery = (q: { sql: string }) => {
        if (/^delete from "registrations" where "end_user_id" in/i.test(q.sql)) kinds.push('replace');
        else if (/^insert into "registrations" .* on conflict/i.test(q.sql)) kinds.push('in place');
      };
      db.on('query', onQuery);
      try {
        location.apply(user.accountId, user.extension, [binding(a, 3)], [], 10);
        writer.mark(user, { registeredAt: new Date().toISOString(), urgent: false });
        await writer.settled();
      } finally {
        db.off('query', onQuery);
      }
      assert.deepEqual(kinds, ['in place']);
      assert.deepEqual(await stored(), [a]);
    } finally {
      await db.raw('drop trigger "fail_once_delete"');
      await db.raw('drop table "fail_once"');
      await writer.close();
    }
  });
});
