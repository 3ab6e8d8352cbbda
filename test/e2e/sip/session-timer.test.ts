/**
 * Issue 19 item 7, "done when": RFC 4028 session timers for real. A SIPp carrier asks for Session-Expires 90 with
 * itself as refresher and never refreshes: the switch answers with the timer agreed (Session-Expires: 90;
 * refresher=uac, Require: timer), ends the call with BYE 60 s after answer (90 s minus min(32, 90/3), §10), with
 * reason END.0422, billed to that moment. An interval below 90 s gets 422 with Min-SE: 90 and no call.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { runSipp, SCENARIOS } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { eventually } from '../../support/wait.js';

describe('e2e: RFC 4028 session timers', function () {
  this.timeout(150_000);
  const t = useCarrierSwitch({ did: '+254711960001' });
  before(async () => {
    t.server.verbs('/voice', '<Response><Say>Hello.</Say><Pause length="300"/></Response>');
    await t.setInboundUrl(t.server.url('/voice'));
  });

  // Longer than carrierCalls' SIPp limit (65 s): the timer fires a minute after answer.
  const carrierCall = (scenario: string, se: number, limitSeconds: number) =>
    (t.sipp = runSipp(
      [
        `127.0.0.1:${t.ports.sip}`,
        ...['-sf', path.join(SCENARIOS, scenario), '-s', t.did.replace(/^\+/, '')],
        ...['-key', 'media_sink', String(t.sinkPort), '-key', 'se', String(se)],
        ...['-i', '127.0.0.1', '-p', String(t.callerPort), '-m', '1'],
        ...['-timeout', `${limitSeconds}s`, '-recv_timeout', `${limitSeconds * 1000}`],
      ],
      { limitMs: (limitSeconds + 10) * 1000 },
    ));

  const lastCall = () => t.ctx.db('calls').where({ account_id: t.acct.id }).orderBy('created_at', 'desc').first();

  it('Session-Expires 90 never refreshed: BYE from the switch 60 s after answer, END.0422, billed to then', async () => {
    const started = Date.now();
    const run = carrierCall('uac-inbound-session-timer.xml', 90, 100);
    assert.equal(await run.exited, 0, run.output());
    const byeAfter = (Date.now() - started) / 1000;
    const call = await eventually(async () => {
      const c = await lastCall();
      return c?.ended_at ? c : undefined;
    }, 'the call ended');
    assert.equal(call.reason_code, 'END.0422');
    assert.equal(call.status, 'completed');
    const talked = (Date.parse(call.ended_at) - Date.parse(call.answered_at)) / 1000;
    assert.ok(talked >= 59 && talked <= 63, `ended ${talked} s after answer (SIPp saw the BYE after ${byeAfter} s)`);
    assert.ok(Math.abs(Number(call.duration_seconds) - talked) <= 1, `duration ${call.duration_seconds} s`);
    // Inbound is rated 0.50 a minute (harness): about a minute's worth, not the 300 s the document would run.
    assert.ok(Number(call.cost_cents) > 0 && Number(call.cost_cents) <= 100, `cost ${call.cost_cents} cents`);
    console.log(
      `      ended ${talked.toFixed(1)} s after answer, duration ${call.duration_seconds} s, cost ${call.cost_cents} cents`,
    );
    await t.server.waitFor(
      () => t.server.requests.some((r) => r.url === '/status' && r.json?.data?.reasonCode === 'END.0422'),
      10000,
      'status callback with END.0422',
    );
  });

  it('a bridged call (Dial to a carrier leg) whose caller stops refreshing: BYE to both legs at 60 s, END.0422', async () => {
    await t.setInboundUrl(t.server.url('/bridge'));
    t.server.verbs('/bridge', '<Response><Dial><Number>+254722000881</Number></Dial></Response>');
    // The dialled carrier answers and waits for the switch's BYE (uas-answer.xml), past carrier()'s 65 s limit.
    const callee = runSipp(
      [
        ...['-sf', path.join(SCENARIOS, 'uas-answer.xml'), '-key', 'media_sink', String(t.sinkPort)],
        ...['-i', '127.0.0.1', '-p', String(t.carrierPort), '-m', '1', '-timeout', '100s'],
      ],
      { limitMs: 110_000 },
    );
    try {
      const run = carrierCall('uac-inbound-session-timer.xml', 90, 100);
      assert.equal(await run.exited, 0, run.output());
      assert.equal(await callee.exited, 0, `the dialled leg got its BYE too\n${callee.output()}`);
    } finally {
      callee.kill();
      await t.setInboundUrl(t.server.url('/voice'));
    }
    const rows = await eventually(async () => {
      const all = await t.ctx.db('calls').where({ account_id: t.acct.id }).orderBy('created_at', 'desc').limit(2);
      return all.length === 2 && all.every((c: { ended_at: string | null }) => c.ended_at) ? all : undefined;
    }, 'both legs ended');
    const parent = rows.find((c: { parent_call_id: string | null }) => !c.parent_call_id);
    const child = rows.find((c: { parent_call_id: string | null }) => c.parent_call_id);
    assert.equal(parent?.reason_code, 'END.0422');
    assert.equal(child?.parent_call_id, parent?.id);
    const talked = (Date.parse(parent.ended_at) - Date.parse(parent.answered_at)) / 1000;
    assert.ok(talked >= 59 && talked <= 63, `ended ${talked} s after answer`);
    assert.ok(Math.abs(Date.parse(child.ended_at) - Date.parse(parent.ended_at)) < 3000, 'the legs ended together');
  });

  it('a caller without timer support: the switch is the refresher and re-INVITEs within 45 s; the call goes on', async () => {
    const started = Date.now();
    const run = carrierCall('uac-inbound-switch-refreshes.xml', 90, 70);
    assert.equal(await run.exited, 0, run.output());
    const took = (Date.now() - started) / 1000;
    assert.ok(took >= 44 && took < 60, `re-INVITE seen ${took} s after the call began`);
    const call = await eventually(async () => {
      const c = await lastCall();
      return c?.ended_at ? c : undefined;
    }, 'the call ended');
    assert.equal(call.reason_code, 'END.0200', 'the carrier hung up: a normal end, not the timer');
  });

  it('Session-Expires 60 (below Min-SE 90): 422 with Min-SE: 90, no call', async () => {
    const before = await t.ctx.db('calls').where({ account_id: t.acct.id }).count({ n: '*' }).first();
    const run = carrierCall('uac-inbound-se-too-small.xml', 60, 15);
    assert.equal(await run.exited, 0, run.output());
    const after = await t.ctx.db('calls').where({ account_id: t.acct.id }).count({ n: '*' }).first();
    assert.equal(Number(after?.n), Number(before?.n));
  });
});
