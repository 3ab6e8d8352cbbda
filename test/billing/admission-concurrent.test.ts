import assert from 'node:assert/strict';
import type { Db } from '../../store/index.js';
import { insertAccount, updateAccount, updateCall } from '../../store/index.js';
import { post } from '../../billing/index.js';
import { StoreAdmission, AdmissionRefusedError } from '../../billing/admission.js';
import { BOTH_DBS } from '../support/db.js';
import { insertOutboundCall } from '../support/outbound-call.js';

/**
 * Admission decides a call far from its account's limits without waiting for the account's other admissions (on
 * PostgreSQL a busy account's calls queued behind each other's round trips), and near the limits still exactly.
 */
for (const kind of BOTH_DBS) {
  describe(`admission of a busy account on ${kind.name}`, function () {
    this.timeout(60000);
    let db: Db;
    before(async () => {
      db = await kind.open();
    });
    after(async () => db?.destroy());

    const account = async (name: string, maxConcurrent: number, cents: number) => {
      const a = await insertAccount(db, name);
      await updateAccount(db, a.id, { max_concurrent_calls: maxConcurrent, max_cps: 100_000 });
      await post(db, { accountId: a.id, direction: 'credit', kind: 'topup', amountCents: cents });
      return a.id;
    };
    const newCall = (accountId: string) => insertOutboundCall(db, accountId);
    const within = <T>(p: Promise<T>, ms: number) =>
      Promise.race([p, new Promise<'still waiting'>((r) => setTimeout(() => r('still waiting'), ms).unref())]);

    it('admits a call far from the limits while another call of the account is still being placed', async () => {
      const id = await account('Busy', 100, 1_000_000);
      const admission = new StoreAdmission(db);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let placing!: () => void;
      const placingFirst = new Promise<void>((r) => (placing = r));
      const first = admission.admit({ accountId: id }, async () => {
        placing();
        await held; // a slow placement (a round trip under load)
        return newCall(id);
      });
      await placingFirst;
      try {
        const second = await within(
          admission.admit({ accountId: id }, () => newCall(id)),
          3000,
        );
        assert.notEqual(second, 'still waiting', 'the second call waited for the first one');
      } finally {
        release();
        await first;
      }
    });

    it('near the cap a call waits for the placements under way, then is decided on the exact count', async () => {
      const id = await account('Near', 2, 1_000_000);
      const admission = new StoreAdmission(db);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let started = 0;
      let bothStarted!: () => void;
      const admittedBoth = new Promise<void>((r) => (bothStarted = r));
      // Placements slow to write their rows (a round trip under load).
      const slow = () =>
        admission.admit({ accountId: id }, async () => {
          if (++started === 2) bothStarted();
          await held;
          return newCall(id);
        });
      const first = slow();
      const second = slow();
      await admittedBoth; // the third arrives after both were admitted
      const third = admission.admit({ accountId: id }, () => newCall(id));
      assert.equal(await within(third, 300), 'still waiting', 'decided before the placements under way settled');
      release();
      await Promise.all([first, second]);
      await assert.rejects(third, (e: unknown) => e instanceof AdmissionRefusedError && e.code === 'LIMIT.0429');
      assert.equal((await db('calls').where({ account_id: id })).length, 2);
    });

    it('calls arriving and ending at random never hold more than the cap', async () => {
      const cap = 4;
      const id = await account('Churn', cap, 1_000_000);
      const admission = new StoreAdmission(db);
      let live = 0;
      let most = 0;
      let admitted = 0;
      const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
      await Promise.all(
        Array.from({ length: 120 }, async (_, i) => {
          await pause((i * 7) % 150);
          try {
            const row = await admission.admit({ accountId: id }, async () => {
              const r = await newCall(id);
              live++;
              most = Math.max(most, live);
              return r;
            });
            admitted++;
            await pause(5 + ((i * 13) % 40));
            live--;
            await updateCall(db, row.id, { status: 'completed' });
          } catch (e) {
            if (!(e instanceof AdmissionRefusedError)) throw e;
          }
        }),
      );
      assert.ok(most <= cap, `at most ${cap} live at once, saw ${most}`);
      assert.ok(admitted > cap, `slots are given back and reused (${admitted} admitted)`);
    });
  });
}
