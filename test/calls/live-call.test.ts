import assert from 'node:assert/strict';
import { ReasonCodes } from '../../events/index.js';
import { insertAccount, type Db } from '../../store/index.js';
import { VERB_REGISTRY, VerbTaskBase, parseVerbDocument, type VerbOutcome } from '../../verbs/index.js';
import type { LiveCallDeps } from '../../calls/live-call.js';
import { sqliteDb } from '../support/db.js';
import { deferred, inboundLiveCall, settle, subsequence, until } from './fakes.js';

/**
 * LiveCall as the composition of its verbs (calls/verb-context.ts) and its teardown (calls/call-teardown.ts): an
 * inbound call rings, the first verb that needs the line answers it, and the end races the answer, the caller's
 * BYE and the verbs. The real lifecycle and store (SQLite in a temp dir) and the real interpreter on parsed
 * documents; the caller's leg, media and billing are stand-ins logging to one ordered list; time is a manual
 * clock (Pause sleeps on it).
 */
describe('calls: a live call answers, runs verbs and ends once, whatever races', () => {
  let db: Db;
  let accountId: string;

  before(async () => {
    db = await sqliteDb.open();
    accountId = (await insertAccount(db, 'Live')).id;
  });
  after(async () => db?.destroy());

  const inbound = (extra: Partial<LiveCallDeps> = {}) => inboundLiveCall(db, accountId, extra);

  const doc = (xml: string) => ({ document: parseVerbDocument(xml) });

  it('the first Say answers the call; the end of the document ends it in order', async () => {
    const t = await inbound();
    t.leg.mediaReady.resolve();
    await t.call.runVerbs(doc('<Response><Say>Hello</Say></Response>'));
    assert.deepEqual(t.steps, [
      'answer',
      '200',
      'CALL.0200',
      'billing start',
      'billing started',
      'say Hello',
      'TTS.0200',
      'bye',
      'media close',
      'settle',
      'CALL.0300',
    ]);
    assert.equal(t.call.row.status, 'completed');
    assert.equal(t.call.row.tts_seconds, 2, 'TTS seconds rounded up per utterance');
  });

  it('a verb that fails inside the platform: SYS.0500, the fallback message, BYE, reason SYS.0500', async () => {
    class BrokenPause extends VerbTaskBase {
      readonly name = 'Pause' as const;
      async exec(): Promise<VerbOutcome> {
        throw new TypeError('injected failure');
      }
    }
    await db('accounts').where({ id: accountId }).update({ fallback_mode: 'message', fallback_value: 'Sorry.' });
    try {
      const t = await inbound({ verbRegistry: () => ({ ...VERB_REGISTRY, Pause: BrokenPause }) });
      t.leg.mediaReady.resolve();
      await t.call.runVerbs(doc('<Response><Say>Hello</Say><Pause/><Say>never</Say></Response>'));
      const want = ['say Hello', 'SYS.0500', 'say Sorry.', 'bye', 'CALL.0300'];
      assert.deepEqual(subsequence(t.steps, want), want, JSON.stringify(t.steps));
      assert.ok(!t.steps.includes('say never'));
      assert.equal(t.call.row.reason_code, ReasonCodes.platformFailure);
      assert.equal(t.call.row.reason_code, 'SYS.0500');
    } finally {
      await db('accounts').where({ id: accountId }).update({ fallback_mode: 'drop', fallback_value: '' });
    }
  });

  it('a document that hangs up first refuses the ringing call 603: never answered, never billed', async () => {
    const t = await inbound();
    await t.call.runVerbs(doc('<Response><Hangup/></Response>'));
    assert.deepEqual(t.steps, ['refuse 603', 'media close', 'CALL.0400']);
    assert.equal(t.call.row.status, 'failed');
    assert.equal(t.call.row.reason_code, ReasonCodes.rejected);
  });

  it("the caller's CANCEL while the media answer is set up: no 200, 487, not billed", async () => {
    const t = await inbound();
    const running = t.call.runVerbs(doc('<Response><Say>Hello</Say></Response>'));
    await until(() => t.steps.includes('answer'));
    await settle();
    assert.deepEqual(t.steps, ['answer']);
    const ended = t.call.end(ReasonCodes.canceled);
    t.leg.mediaReady.resolve(); // the answer completes after the end began
    const row = await ended;
    await running;
    assert.deepEqual(t.steps, ['answer', 'no 200', 'refuse 487', 'media close', 'CALL.0400']);
    assert.equal(row.status, 'failed');
    assert.equal(row.reason_code, ReasonCodes.canceled);
    assert.equal(t.billing.settlements.length, 0);
  });

  it("the caller's BYE while the answer is still starting credit control: no BYE back, settled once", async () => {
    const t = await inbound();
    const gate = deferred();
    t.billing.answerGate = gate.promise;
    t.leg.mediaReady.resolve();
    const running = t.call.runVerbs(doc('<Response><Say>Hello</Say></Response>'));
    await until(() => t.steps.includes('billing start'));
    assert.deepEqual(t.steps, ['answer', '200', 'CALL.0200', 'billing start']);
    t.dialog.remoteBye();
    await settle();
    assert.ok(!t.steps.includes('media close'), 'the end waits for the answer to finish');
    gate.resolve();
    await running;
    const row = await t.call.life.ended;
    const order = ['remote bye', 'billing started', 'media close', 'settle', 'CALL.0300'];
    assert.deepEqual(subsequence(t.steps, order), order);
    assert.ok(!t.steps.includes('bye'), 'the far end hung up: no BYE back');
    assert.equal(row.status, 'completed');
    assert.equal(row.reason_code, ReasonCodes.normalHangup);
    assert.equal(t.billing.settlements.length, 1);
  });

  it('an API hangup while the 200 is being completed: the answer finishes, then BYE, settled once', async () => {
    const t = await inbound();
    const gate = deferred();
    t.billing.answerGate = gate.promise;
    t.leg.mediaReady.resolve();
    const running = t.call.runVerbs(doc('<Response><Say>Hello</Say></Response>'));
    await until(() => t.steps.includes('billing start'));
    const ended = t.call.end(ReasonCodes.normalHangup);
    await settle();
    assert.ok(!t.steps.includes('bye'));
    gate.resolve();
    const row = await ended;
    await running;
    const order = ['answer', '200', 'CALL.0200', 'billing start', 'billing started', 'bye', 'media close', 'settle'];
    assert.deepEqual(subsequence(t.steps, [...order, 'CALL.0300']), [...order, 'CALL.0300']);
    assert.equal(t.steps.filter((s) => s === 'bye').length, 1);
    assert.equal(row.status, 'completed');
    assert.equal(t.billing.settlements.length, 1);
  });

  it('an API hangup during a Say stops the verbs before the BYE; the next verb never runs', async () => {
    const t = await inbound();
    t.media.holdPlayback = true;
    t.leg.mediaReady.resolve();
    const abortedAtBye: boolean[] = [];
    t.dialog.bye = async () => {
      abortedAtBye.push(t.media.signals[0]!.aborted);
      t.steps.push('bye');
    };
    const running = t.call.runVerbs(doc('<Response><Say>one</Say><Say>two</Say></Response>'));
    await until(() => t.steps.includes('say one'));
    assert.equal(t.steps.at(-1), 'say one');
    t.clock.advance(30_000);
    const row = await t.call.end(ReasonCodes.normalHangup);
    await running;
    assert.deepEqual(abortedAtBye, [true], 'the Say was aborted before the BYE went out');
    assert.ok(!t.steps.includes('say two'), 'no verb after the hangup');
    const order = ['say one', 'bye', 'media close', 'settle', 'CALL.0300'];
    assert.deepEqual(subsequence(t.steps, order), order);
    assert.equal(row.duration_seconds, 30, 'by the manual clock');
    assert.equal(row.talk_seconds, 30, 'from the same instants as the duration, never above it');
  });

  it('BYE, API hangup, end of verbs and shutdown at once: one teardown, settlement exactly once', async () => {
    const t = await inbound();
    t.media.holdPlayback = true;
    t.leg.mediaReady.resolve();
    const running = t.call.runVerbs(doc('<Response><Say>one</Say></Response>'));
    await until(() => t.steps.includes('say one'));
    t.dialog.remoteBye();
    const rows = await Promise.all([
      t.call.end(ReasonCodes.normalHangup),
      t.call.end(ReasonCodes.canceled),
      t.call.end(ReasonCodes.rejected),
      running.then(() => t.call.life.ended),
    ]);
    assert.ok(rows.every((r) => r === rows[0]));
    assert.equal(t.billing.settlements.length, 1);
    assert.equal(t.steps.filter((s) => s === 'media close').length, 1);
    assert.equal(t.steps.filter((s) => s === 'CALL.0300').length, 1);
    assert.ok(!t.steps.includes('bye'), 'the far end hung up: no BYE back');
  });

  it('Pause answers, then waits on the clock: the next verb runs when 5 s have passed, not before', async () => {
    const t = await inbound();
    t.leg.mediaReady.resolve();
    const running = t.call.runVerbs(doc('<Response><Pause length="5"/><Say>after</Say></Response>'));
    await until(() => t.clock.pendingTimers > 0);
    assert.equal(t.clock.pendingTimers, 1);
    t.clock.advance(4_999);
    await settle();
    assert.ok(!t.steps.includes('say after'));
    t.clock.advance(1);
    await running;
    assert.ok(t.steps.includes('say after'));
    assert.equal(t.call.row.status, 'completed');
    assert.equal(t.call.row.duration_seconds, 5);
  });

  it('a hangup during a Pause releases it at once (no wait for the clock)', async () => {
    const t = await inbound();
    t.leg.mediaReady.resolve();
    const running = t.call.runVerbs(doc('<Response><Pause length="60"/></Response>'));
    await until(() => t.clock.pendingTimers > 0);
    assert.equal(t.clock.pendingTimers, 1);
    await t.call.end(ReasonCodes.normalHangup);
    await running;
    assert.equal(t.clock.pendingTimers, 0);
    assert.equal(t.call.row.status, 'completed');
  });
});
