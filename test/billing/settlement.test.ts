import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { getAccount, insertAccount, insertCallCredit, nowIso } from '../../store/index.js';
import { driverOf } from '../../store/db.js';
import { post, settleCall, talkKey, ttsKey } from '../../billing/index.js';
import { BOTH_DBS } from '../support/db.js';
import { insertOutboundCall } from '../support/outbound-call.js';

/**
 * A call's settlement: exactly once, capped at the balance, the ledger's net equal to the balance, and in as few
 * statements as the rules allow (a first settlement reads neither its keys nor the balance before posting).
 */
for (const kind of BOTH_DBS) {
  describe(`call settlement on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    /** An account holding `cents`, and an answered call of it with its live credit row. */
    async function answeredCall(cents: number) {
      const a = await insertAccount(db, 'Settle');
      if (cents > 0) await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: cents });
      const call = await insertOutboundCall(db, a.id);
      const at = nowIso();
      await insertCallCredit(db, {
        call_id: call.id,
        account_id: a.id,
        node_id: null,
        rate_cents_per_minute: 10,
        answered_at: at,
        heartbeat_at: at,
      });
      return { accountId: a.id, callId: call.id };
    }

    /** The statements `fn` sends, transaction control left out. */
    async function statementsOf(fn: () => Promise<unknown>): Promise<string[]> {
      const seen: string[] = [];
      const stop = driverOf(db).onStatement((s) => {
        if (!/^\s*(begin|commit|rollback|savepoint|release)\b/i.test(s.sql)) seen.push(s.sql);
      });
      try {
        await fn();
      } finally {
        stop();
      }
      return seen;
    }

    async function ledgerOf(accountId: string) {
      const rows = await db('wallet_transactions').where({ account_id: accountId }).orderBy('seq');
      const net = rows.reduce(
        (n: number, r: { direction: string; amount_cents: unknown }) =>
          n + (r.direction === 'credit' ? 1 : -1) * Number(r.amount_cents),
        0,
      );
      return { rows, net, balance: (await getAccount(db, accountId)).balance_cents };
    }

    it('posts a first settlement without reading its keys or the balance first', async () => {
      const c = await answeredCall(1000);
      const sql = await statementsOf(() => settleCall(db, { ...c, talkCents: 120, ttsCents: 0 }));
      assert.ok(!sql.some((s) => /^select \* from "wallet_transactions"/i.test(s)), `keys read: ${sql.join('\n')}`);
      // SQLite: the credit row deleted, the row inserted, the balance set. PostgreSQL: the credit row deleted with
      // the account locked, then the row and the balance in one statement.
      assert.equal(sql.length, kind.name === 'sqlite' ? 3 : 2, sql.join('\n'));
      const l = await ledgerOf(c.accountId);
      assert.equal(l.balance, 880);
      assert.equal(l.net, l.balance);
      assert.equal(await db('call_credit').where({ call_id: c.callId }).first(), undefined);
    });

    it('returns what was posted when settled again, and posts nothing more', async () => {
      const c = await answeredCall(1000);
      const first = await settleCall(db, { ...c, talkCents: 120, ttsCents: 30 });
      assert.equal(first.posted.length, 2);
      assert.equal(first.balanceAfterCents, 850);
      // A second settlement rated differently (a sweep) must still find the first one's rows, both keys.
      const again = await settleCall(db, { ...c, talkCents: 200, ttsCents: 0 });
      assert.deepEqual(
        { talk: again.talkCents, tts: again.ttsCents, posted: again.posted.length },
        { talk: 120, tts: 30, posted: 0 },
      );
      const l = await ledgerOf(c.accountId);
      assert.equal(l.balance, 850);
      assert.equal(l.net, l.balance);
      assert.equal(l.rows.filter((r: { call_id: string }) => r.call_id === c.callId).length, 2);
    });

    it('finds an earlier settlement of a key it does not post (speech settled, talk rated zero)', async () => {
      const c = await answeredCall(1000);
      await settleCall(db, { ...c, talkCents: 0, ttsCents: 40 });
      const again = await settleCall(db, { ...c, talkCents: 0, ttsCents: 0 });
      assert.deepEqual({ tts: again.ttsCents, posted: again.posted.length }, { tts: 40, posted: 0 });
      assert.equal((await ledgerOf(c.accountId)).balance, 960);
    });

    it('charges a call once when it is settled many times at once', async () => {
      const c = await answeredCall(1000);
      const all = await Promise.all(
        Array.from({ length: 8 }, () => settleCall(db, { ...c, talkCents: 100, ttsCents: 7 })),
      );
      assert.equal(
        all.reduce((n, s) => n + s.posted.length, 0),
        2,
      );
      for (const s of all) assert.deepEqual([s.talkCents, s.ttsCents], [100, 7]);
      const l = await ledgerOf(c.accountId);
      assert.equal(l.balance, 893);
      assert.equal(l.net, l.balance);
      const keys = l.rows.map((r: { settlement_key: string | null }) => r.settlement_key);
      assert.deepEqual(keys.filter(Boolean).sort(), [talkKey(c.callId), ttsKey(c.callId)].sort());
    });

    it('caps the debits at the balance, chaining balance_before, never below zero', async () => {
      const c = await answeredCall(100);
      const s = await settleCall(db, { ...c, talkCents: 80, ttsCents: 50 });
      assert.deepEqual([s.talkCents, s.ttsCents, s.balanceAfterCents], [80, 20, 0]);
      const l = await ledgerOf(c.accountId);
      assert.deepEqual(
        l.rows.map((r: { balance_before_cents: unknown; seq: unknown }) => [
          Number(r.seq),
          Number(r.balance_before_cents),
        ]),
        [
          [1, 0],
          [2, 100],
          [3, 20],
        ],
      );
      assert.equal(l.balance, 0);
      assert.equal(l.net, l.balance);
    });

    it('refuses to settle for an account that does not exist', async () => {
      await assert.rejects(
        settleCall(db, { accountId: 'acc_missing', callId: 'call_missing', talkCents: 10, ttsCents: 0 }),
        /acc_missing/,
      );
    });
  });
}
