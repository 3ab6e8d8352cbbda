import assert from 'node:assert/strict';
import { roomLogger } from '../../config/index.js';
import { ReasonCodes } from '../../events/index.js';
import { ManualClock } from '../../kit/index.js';
import type { Dialog } from '../../sip/stack/index.js';
import { insertAccount, insertCall, nowIso, type Db } from '../../store/index.js';
import { BridgedCall, type BridgedCallDeps } from '../../calls/bridged-call.js';
import { CallTeardown } from '../../calls/call-teardown.js';
import { CallLifecycle } from '../../calls/call-lifecycle.js';
import { sqliteDb } from '../support/db.js';
import { CALL_EPOCH, FakeBilling, FakeDialog, deferred, fakeEvents, until, type Steps } from './fakes.js';

/**
 * BridgedCall (calls/bridged-call.ts), an on-net call of two SIP legs through rtpengine, ends through the one
 * CallTeardown a LiveCall uses: the same order (hooks → BYE → media → settlement → CDR), once. The real
 * lifecycle on the real store (SQLite in a temp dir); the legs' dialogs, the media session and billing are
 * stand-ins logging to one ordered list; time is the kit's ManualClock.
 */
describe('calls: a bridged call ends through CallTeardown', () => {
  let db: Db;
  let accountId: string;
  const log = roomLogger('calls');

  before(async () => {
    db = await sqliteDb.open();
    accountId = (await insertAccount(db, 'Bridged')).id;
  });
  after(async () => db?.destroy());

  async function bridged() {
    const steps: Steps = [];
    const clock = new ManualClock(CALL_EPOCH);
    const row = await insertCall(db, {
      account_id: accountId,
      direction: 'internal',
      from_number: '1001',
      to_number: '1002',
      started_at: nowIso(new Date(clock.now())),
    });
    const events = fakeEvents(steps);
    const billing = new FakeBilling(steps);
    const deleted: string[] = [];
    const media = {
      deleteSession: async (callId: string) => {
        deleted.push(callId);
        steps.push('media close');
        return {};
      },
    } as unknown as BridgedCallDeps['media'];
    const call = new BridgedCall({ media, log, billing, clock }, new CallLifecycle({ db, events, log }, row));
    const caller = new FakeDialog(steps, 'caller');
    const callee = new FakeDialog(steps, 'callee');
    call.attach(callee as unknown as Dialog);
    call.attach(caller as unknown as Dialog);
    return { steps, clock, call, billing, caller, callee, deleted };
  }

  it("the callee's BYE: hook, BYE to the caller only, media, settlement, CDR and CALL.0300, at the clock's instant", async () => {
    const t = await bridged();
    t.call.onEnd(() => t.steps.push('hook'));
    t.clock.advance(3_000);
    await t.call.answered();
    t.clock.advance(20_000);
    t.steps.length = 0;
    t.callee.remoteBye();
    const row = await t.call.life.ended;
    assert.deepEqual(t.steps, ['remote bye callee', 'hook', 'bye caller', 'media close', 'settle', 'CALL.0300']);
    assert.deepEqual(t.deleted, [t.call.id], "the bridge's media session is deleted");
    assert.equal(row.status, 'completed');
    assert.equal(row.reason_code, ReasonCodes.normalHangup);
    assert.equal(row.ended_at, nowIso(new Date(t.clock.now())), 'ended at the injected clock, not the wall clock');
    assert.equal(row.duration_seconds, 23);
    assert.deepEqual(t.billing.settlements, [{ callId: t.call.id, endedAt: new Date(t.clock.now()) }]);
    assert.equal(row.cost_cents, 7, 'the settled cost is on the CDR');
  });

  it("end() is the teardown's: CallTeardown.end is asked with the reason and the leg that hung up", async () => {
    const t = await bridged();
    const seen: Array<{ reason: string; byeFrom: unknown }> = [];
    const original = CallTeardown.prototype.end;
    CallTeardown.prototype.end = function (this: CallTeardown, reason, opts = {}) {
      seen.push({ reason, byeFrom: opts.byeFrom });
      return original.call(this, reason, opts);
    };
    try {
      t.caller.remoteBye();
      await t.call.life.ended;
    } finally {
      CallTeardown.prototype.end = original;
    }
    assert.deepEqual(seen, [{ reason: ReasonCodes.normalHangup, byeFrom: t.caller }]);
    assert.ok(t.steps.includes('bye callee') && !t.steps.includes('bye caller'));
  });

  it('BYEs from both legs, an API hangup and shutdown at once: one teardown, one BYE at most per leg, settled once', async () => {
    const t = await bridged();
    await t.call.answered();
    t.steps.length = 0;
    t.caller.remoteBye();
    t.callee.remoteBye();
    const rows = await Promise.all([
      t.call.end(ReasonCodes.normalHangup),
      t.call.end(ReasonCodes.canceled),
      t.call.life.ended,
    ]);
    assert.ok(
      rows.every((r) => r === rows[0]),
      'every end() is the one promise',
    );
    assert.equal(t.billing.settlements.length, 1);
    assert.equal(t.steps.filter((s) => s === 'media close').length, 1);
    assert.equal(t.steps.filter((s) => s === 'CALL.0300').length, 1);
    assert.deepEqual(
      t.steps.filter((s) => s.startsWith('bye')),
      ['bye callee'],
      "the first BYE (the caller's) ended it: only the callee is sent one",
    );
  });

  it('a hangup while credit control is starting waits for it: settlement sees the answer it started', async () => {
    const t = await bridged();
    const gate = deferred();
    t.billing.answerGate = gate.promise;
    const answering = t.call.answered();
    await until(() => t.steps.includes('billing start'));
    const ending = t.call.end(ReasonCodes.normalHangup);
    await new Promise<void>((r) => setImmediate(r));
    assert.ok(!t.steps.includes('settle'), 'not settled before credit control started');
    gate.resolve();
    await answering;
    await ending;
    const order = t.steps.filter((s) =>
      ['billing started', 'bye caller', 'bye callee', 'media close', 'settle'].includes(s),
    );
    assert.deepEqual(order, ['bye callee', 'bye caller', 'billing started', 'media close', 'settle']);
  });
});
