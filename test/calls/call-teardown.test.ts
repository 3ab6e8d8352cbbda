import assert from 'node:assert/strict';
import { roomLogger } from '../../config/index.js';
import { ReasonCodes } from '../../events/index.js';
import { insertAccount, insertCall, findCallAnyAccount, nowIso, type Db } from '../../store/index.js';
import { CallLifecycle } from '../../calls/lifecycle.js';
import { CallTeardown } from '../../calls/call-teardown.js';
import { sqliteDb } from '../support/db.js';
import { ManualClock } from '../../kit/index.js';
import { CALL_EPOCH, FakeBilling, FakeDialog, FakeLeg, FakeMedia, deferred, fakeEvents, type Steps } from './fakes.js';

/**
 * CallTeardown alone (calls/call-teardown.ts): the real lifecycle on the real store (SQLite in a temp dir); the
 * leg, the media and billing are stand-ins writing to one ordered log; time is a manual clock.
 */
describe('calls: the teardown of a live call', () => {
  let db: Db;
  let accountId: string;
  const log = roomLogger('calls');

  before(async () => {
    db = await sqliteDb.open();
    accountId = (await insertAccount(db, 'Teardown')).id;
  });
  after(async () => db?.destroy());

  async function setup(opts: { answered?: boolean } = {}) {
    const steps: Steps = [];
    const clock = new ManualClock(CALL_EPOCH);
    const row = await insertCall(db, {
      account_id: accountId,
      direction: 'inbound',
      from_number: '+254733000001',
      to_number: '+254711000001',
      started_at: nowIso(new Date(clock.now())),
    });
    const life = new CallLifecycle({ db, events: fakeEvents(steps), log }, row);
    const media = new FakeMedia(steps);
    const billing = new FakeBilling(steps);
    const kept: string[] = [];
    const teardown = new CallTeardown({
      life,
      media,
      log,
      clock,
      billing,
      keepRecording: async (r) => {
        kept.push(r.path);
        steps.push('recording kept');
      },
    });
    if (opts.answered) {
      clock.advance(5_000);
      await life.answered(new Date(clock.now()));
    }
    steps.length = 0;
    return { steps, clock, life, media, billing, teardown, kept, row };
  }

  it('ends an answered call in order: verbs, hooks, BYE, media, recording, settlement, CDR and CALL.0300', async () => {
    const t = await setup({ answered: true });
    t.teardown.verbsRunning(() => t.steps.push('stop verbs'));
    t.teardown.onEnd(() => t.steps.push('hook'));
    t.teardown.legUp(new FakeDialog(t.steps));
    t.media.sessionRecording = { path: '/rec/session.wav', durationSec: 12, sizeBytes: 1000, reason: 'stopped' };
    t.clock.advance(42_000);
    const row = await t.teardown.end(ReasonCodes.normalHangup);
    assert.deepEqual(t.steps, ['stop verbs', 'hook', 'bye', 'media close', 'recording kept', 'settle', 'CALL.0300']);
    assert.equal(row.status, 'completed');
    assert.equal(row.reason_code, ReasonCodes.normalHangup);
    assert.equal(row.cost_cents, 7, 'the settled cost is on the CDR');
    assert.equal(row.talk_seconds, 42, 'from the answer to the end, as billing rated it');
    assert.equal(row.ended_at, nowIso(new Date(t.clock.now())));
    assert.equal(row.duration_seconds, 47, 'from the start to the clock at the end');
    assert.deepEqual(t.billing.settlements, [{ callId: t.row.id, endedAt: new Date(t.clock.now()) }]);
    assert.deepEqual(t.kept, ['/rec/session.wav']);
    assert.equal((await findCallAnyAccount(db, t.row.id))?.status, 'completed', 'stored');
  });

  it('end() twice, or from several places at once, is one teardown and one promise', async () => {
    const t = await setup({ answered: true });
    t.teardown.legUp(new FakeDialog(t.steps));
    const first = t.teardown.end(ReasonCodes.normalHangup);
    const second = t.teardown.end(ReasonCodes.rejected);
    assert.equal(first, second, 'the same promise');
    assert.equal(t.teardown.isEnding, true);
    const [a, b] = await Promise.all([first, second, t.teardown.end(ReasonCodes.canceled, { remoteHungUp: true })]);
    assert.equal(a, b);
    assert.equal(a.reason_code, ReasonCodes.normalHangup, 'the first reason wins');
    assert.equal((await t.teardown.end(ReasonCodes.canceled)).reason_code, ReasonCodes.normalHangup, 'after too');
    assert.deepEqual(t.steps, ['bye', 'media close', 'settle', 'CALL.0300']);
  });

  it('the far end hung up: no BYE back, settled once', async () => {
    const t = await setup({ answered: true });
    t.teardown.legUp(new FakeDialog(t.steps));
    await t.teardown.end(ReasonCodes.normalHangup, { remoteHungUp: true });
    assert.deepEqual(t.steps, ['media close', 'settle', 'CALL.0300']);
    assert.equal(t.billing.settlements.length, 1);
  });

  it('a ringing leg is refused with the status of the reason (487 for a CANCEL), not settled, failed', async () => {
    const t = await setup();
    const leg = new FakeLeg(
      t.steps,
      () => true,
      async () => undefined,
    );
    t.teardown.legRinging(leg);
    const row = await t.teardown.end(ReasonCodes.canceled);
    assert.deepEqual(t.steps, ['refuse 487', 'media close', 'CALL.0400']);
    assert.equal(row.status, 'failed');
    assert.equal(t.billing.settlements.length, 0, 'never answered, never billed');
  });

  it('the first refusal set wins over the one of the reason', async () => {
    const t = await setup();
    t.teardown.legRinging(
      new FakeLeg(
        t.steps,
        () => true,
        async () => undefined,
      ),
    );
    t.teardown.refuseWith({ status: 603, phrase: 'Decline' });
    t.teardown.refuseWith({ status: 500, phrase: 'Call Control Unavailable' });
    await t.teardown.end(ReasonCodes.carrierFailure, { failed: true });
    assert.deepEqual(t.steps.slice(0, 1), ['refuse 603']);
  });

  it('an answer under way is waited for: the 200 that went out is BYEd, not refused', async () => {
    const t = await setup();
    const leg = new FakeLeg(
      t.steps,
      () => false,
      async () => undefined,
    );
    t.teardown.legRinging(leg);
    const answer = deferred();
    t.teardown.answering(answer.promise);
    const ended = t.teardown.end(ReasonCodes.normalHangup);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(t.steps, [], 'nothing sent while the answer is in flight');
    t.teardown.legUp(new FakeDialog(t.steps));
    answer.resolve();
    await ended;
    assert.deepEqual(t.steps, ['bye', 'media close', 'CALL.0400']);
    assert.deepEqual(leg.refusals, []);
  });

  it('settlement waits for the start of credit control that the answer began', async () => {
    const t = await setup({ answered: true });
    const started = deferred();
    t.teardown.billingStarting(started.promise.then(() => void t.steps.push('billing started')));
    const ended = t.teardown.end(ReasonCodes.normalHangup);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(t.steps, []);
    started.resolve();
    await ended;
    assert.deepEqual(t.steps, ['billing started', 'media close', 'settle', 'CALL.0300']);
  });

  it('a media close that fails still settles and closes the CDR', async () => {
    const t = await setup({ answered: true });
    t.media.close = async () => {
      t.steps.push('media close');
      throw new Error('engine gone');
    };
    const row = await t.teardown.end(ReasonCodes.normalHangup);
    assert.deepEqual(t.steps, ['media close', 'settle', 'CALL.0300']);
    assert.equal(row.status, 'completed');
  });
});
