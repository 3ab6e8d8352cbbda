import assert from 'node:assert/strict';
import {
  accountBalance,
  accountFunds,
  callCreditHeartbeats,
  closeCallIfLive,
  deleteCallCredit,
  findCallAnyAccount,
  findCallCredit,
  findLedgerRowBySettlementKey,
  heartbeatCallCredits,
  inTransaction,
  insertAccount,
  insertCall,
  insertCallCredit,
  recordCallCredit,
  insertLedgerRow,
  lastLedgerSeq,
  ledgerRowsBySettlementKeys,
  liveCallIds,
  lockAccountBalance,
  newId,
  patchCallRow,
  setAccountBalance,
  setCallCreditTts,
  type Db,
} from '../../store/index.js';
import { BOTH_DBS } from '../support/db.js';

/** The store functions billing/ works through: the ledger, live call credit, and the reconcile sweep's call rows. */
for (const kind of BOTH_DBS) {
  describe(`store: billing tables on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    it('appends ledger rows and moves the balance in one transaction, rolled back as a whole on a throw', async () => {
      const a = await insertAccount(db, 'Ledger');
      const row = (seq: number, key: string | null) => ({
        id: newId(),
        account_id: a.id,
        direction: 'credit' as const,
        kind: 'topup' as const,
        amount_cents: 500,
        balance_before_cents: 0,
        call_id: null,
        settlement_key: key,
        created_at: new Date().toISOString(),
        seq,
      });
      assert.equal(await lastLedgerSeq(db, a.id), 0);
      await inTransaction(db, async (tx) => {
        assert.equal(await lockAccountBalance(tx, a.id), 0);
        await insertLedgerRow(tx, row(1, 'k1'));
        await setAccountBalance(tx, a.id, 500);
      });
      await assert.rejects(
        inTransaction(db, async (tx) => {
          await insertLedgerRow(tx, row(2, 'k2'));
          await setAccountBalance(tx, a.id, 1000);
          throw new Error('undo');
        }),
        /undo/,
      );
      assert.equal(await accountBalance(db, a.id), 500);
      assert.equal(await lastLedgerSeq(db, a.id), 1);
      assert.equal((await findLedgerRowBySettlementKey(db, 'k1'))?.amount_cents, 500);
      assert.equal(await findLedgerRowBySettlementKey(db, 'k2'), undefined);
      assert.deepEqual(
        (await ledgerRowsBySettlementKeys(db, ['k1', 'k2'])).map((r) => r.settlement_key),
        ['k1'],
      );
      assert.equal(await inTransaction(db, (tx) => lockAccountBalance(tx, newId())), undefined);
      assert.deepEqual(await accountFunds(db, a.id), {
        balance_cents: 500,
        max_call_seconds: a.max_call_seconds,
        credit_warning_seconds: 60,
        language: 'en',
        others_cents: 0,
      });
    });

    it('records credit rows of calls answered together, on PostgreSQL in one statement; a bad one fails alone', async () => {
      const a = await insertAccount(db, 'Credit batch');
      const at = '2024-01-01T00:00:00.000Z';
      const credit = (id: string) => ({
        call_id: id,
        account_id: a.id,
        node_id: 'n1',
        rate_cents_per_minute: 6,
        answered_at: at,
        heartbeat_at: at,
      });
      let inserts = 0;
      const count = (q: { sql: string }) => {
        if (/^insert into "call_credit"/.test(q.sql)) inserts++;
      };
      db.on('query', count);
      try {
        await Promise.all(['b1', 'b2', 'b3', 'b4'].map((id) => recordCallCredit(db, credit(id))));
        assert.equal(inserts, kind.name === 'postgres' ? 1 : 4);
      } finally {
        db.off('query', count);
      }
      const again = await Promise.allSettled([recordCallCredit(db, credit('b2')), recordCallCredit(db, credit('b5'))]);
      assert.deepEqual(
        again.map((r) => r.status),
        ['rejected', 'fulfilled'],
      );
      const ids = (await db('call_credit').where({ account_id: a.id }).orderBy('call_id')).map((r: any) => r.call_id);
      assert.deepEqual(ids, ['b1', 'b2', 'b3', 'b4', 'b5']);
    });

    it('keeps live credit rows: speech, heartbeats with committed cents, what other nodes committed', async () => {
      const a = await insertAccount(db, 'Credit');
      const at = '2024-01-01T00:00:00.000Z';
      const credit = (id: string, node: string) => ({
        call_id: id,
        account_id: a.id,
        node_id: node,
        rate_cents_per_minute: 6,
        answered_at: at,
        heartbeat_at: at,
      });
      await insertCallCredit(db, credit('c1', 'n1'));
      await insertCallCredit(db, credit('c2', 'n2'));
      await setCallCreditTts(db, 'c1', 7, 3);
      const beat = '2024-01-01T00:01:00.000Z';
      assert.equal(
        await heartbeatCallCredits(db, beat, [
          { callId: 'c1', committedCents: 11 },
          { callId: 'c2', committedCents: 22 },
          { callId: 'gone', committedCents: 33 },
        ]),
        2,
      );
      const c1 = await findCallCredit(db, 'c1');
      assert.deepEqual(
        [c1?.tts_cents, c1?.tts_seconds, c1?.committed_cents, c1?.heartbeat_at, c1?.rate_cents_per_minute],
        [7, 3, 11, beat, 6],
      );
      const others = async (nodeId: string, since: string) =>
        (await accountFunds(db, a.id, { nodeId, since }))?.others_cents;
      assert.equal(await others('n1', beat), 22);
      assert.equal(await others('n2', beat), 11);
      assert.equal(await others('n1', '2024-01-01T00:02:00.000Z'), 0, 'stale heartbeats');
      await deleteCallCredit(db, 'c2');
      assert.deepEqual(await callCreditHeartbeats(db, ['c1', 'c2']), [{ call_id: 'c1', heartbeat_at: beat }]);
    });

    it('finds live calls by age and node, and closes a call only while it is live', async () => {
      const a = await insertAccount(db, 'Calls');
      const old = '2024-01-01T00:00:00.000Z';
      const mk = (node: string, status: 'answered' | 'completed') =>
        insertCall(db, {
          account_id: a.id,
          direction: 'outbound',
          from_number: '+254700000000',
          to_number: '+254722000000',
          status,
          node_id: node,
          created_at: old,
        });
      const live1 = await mk('n1', 'answered');
      const live2 = await mk('n2', 'answered');
      await mk('n1', 'completed');
      assert.deepEqual(await liveCallIds(db, old, 'n1'), [live1.id]);
      assert.deepEqual((await liveCallIds(db, old, null)).sort(), [live1.id, live2.id].sort());
      assert.deepEqual(await liveCallIds(db, '2023-12-31T00:00:00.000Z', null), []);
      assert.equal(await closeCallIfLive(db, live1.id, { status: 'completed', ended_at: old }), true);
      assert.equal(await closeCallIfLive(db, live1.id, { status: 'failed' }), false, 'no longer live');
      await patchCallRow(db, live1.id, { cost_cents: 42, talk_seconds: 7 });
      const c = await findCallAnyAccount(db, live1.id);
      assert.deepEqual([c?.status, c?.cost_cents, c?.talk_seconds], ['completed', 42, 7]);
    });
  });
}
