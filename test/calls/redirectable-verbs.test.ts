import assert from 'node:assert/strict';
import { insertAccount, type Db } from '../../store/index.js';
import { parseVerbDocument } from '../../verbs/index.js';
import { sqliteDb } from '../support/db.js';
import { inboundLiveCall, until } from './fakes.js';

/**
 * REST call update on a live call (calls/redirectable-verbs.ts through LiveCall.redirect): the running verb is
 * interrupted at once and the new document runs instead of the rest of the old one. Real interpreter, lifecycle
 * and store; leg and media are stand-ins logging to one ordered list; the clock is manual, so a Pause of 60 s
 * only ends if something interrupts it.
 */
describe('calls: a live call moved to new verbs (REST call update)', () => {
  let db: Db;
  let accountId: string;
  const doc = (xml: string) => ({ document: parseVerbDocument(xml) });

  before(async () => {
    db = await sqliteDb.open();
    accountId = (await insertAccount(db, 'Redirect')).id;
  });
  after(async () => db?.destroy());

  /** An inbound call whose leg answers as soon as a verb needs the line. */
  async function answeredInbound() {
    const t = await inboundLiveCall(db, accountId);
    t.leg.mediaReady.resolve();
    return t;
  }

  it('a call in a 60 s Pause runs the new document at once; the rest of the old one never runs', async () => {
    const t = await answeredInbound();
    const running = t.call.runVerbs(doc('<Response><Pause length="60"/><Say>never</Say></Response>'));
    await until(() => t.steps.includes('CALL.0200'), 'answered');
    assert.equal(t.call.redirect(doc('<Response><Say>moved</Say></Response>'), 'twiml'), 'ok');
    await running;
    assert.ok(t.steps.includes('say moved'), t.steps.join(', '));
    assert.ok(!t.steps.includes('say never'), 'the verbs after the Pause never run');
    assert.ok(t.steps.includes('CALL.0210'), 'the redirect is an event on the call');
    assert.equal(t.call.row.status, 'completed');
  });

  it('a Say being spoken is stopped by the update', async () => {
    const t = await answeredInbound();
    t.media.holdPlayback = true;
    const running = t.call.runVerbs(doc('<Response><Say>first</Say><Say>never</Say></Response>'));
    await until(() => t.steps.includes('say first'), 'first say');
    t.call.redirect(doc('<Response><Hangup/></Response>'), 'twiml');
    await running;
    assert.ok(t.steps.includes('say first stopped'));
    assert.ok(!t.steps.includes('say never'));
  });

  it('the last of several updates wins, and an update before the verbs start is where they start', async () => {
    const t = await answeredInbound();
    t.call.redirect(doc('<Response><Say>early</Say></Response>'), 'twiml');
    t.call.redirect(doc('<Response><Say>latest</Say></Response>'), 'twiml');
    await t.call.runVerbs(doc('<Response><Say>original</Say></Response>'));
    assert.ok(t.steps.includes('say latest'), t.steps.join(', '));
    assert.ok(!t.steps.includes('say original') && !t.steps.includes('say early'));
  });

  it('an ended call is not redirected and is not sent keys', async () => {
    const t = await answeredInbound();
    await t.call.runVerbs(doc('<Response><Say>bye</Say></Response>'));
    assert.equal(t.call.redirect(doc('<Response><Say>late</Say></Response>'), 'twiml'), 'not_held');
    assert.equal(await t.call.sendDigits('1'), 'not_held');
    assert.ok(!t.steps.includes('say late'));
  });

  it('keys go to the media only once the call is answered, one request after the other', async () => {
    const t = await answeredInbound();
    assert.equal(await t.call.sendDigits('1'), 'not_answered');
    const running = t.call.runVerbs(doc('<Response><Pause length="60"/></Response>'));
    await until(() => t.steps.includes('CALL.0200'), 'answered');
    const [a, b] = await Promise.all([t.call.sendDigits('12'), t.call.sendDigits('w#')]);
    assert.deepEqual([a, b], ['ok', 'ok']);
    assert.deepEqual(
      t.steps.filter((s) => s.startsWith('digits')),
      ['digits 12', 'digits w#'],
    );
    void t.call.end('END.0200');
    await running;
  });
});
