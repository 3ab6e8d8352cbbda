/**
 * Issue 19 item 7, RFC 3262 where a carrier requires it: an INVITE from a trunk with Require: 100rel (refused with
 * 420 before) is taken; its 180 carries Require: 100rel and RSeq and is retransmitted until the carrier's PRACK,
 * which gets 200; the call is then answered and runs as any other.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { runSipp, api, SCENARIOS } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { eventually, waitForBound } from '../../support/wait.js';

/** SIPp's scenario screen: [messages, retransmissions] counted on the first line receiving `status`. */
function counts(output: string, status: number): [number, number] {
  const screen = output.slice(output.lastIndexOf('Scenario Screen'));
  const m = new RegExp(`^\\s*${status} <-+\\s+(\\d+)\\s+(\\d+)`, 'm').exec(screen);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

describe('e2e: RFC 3262 reliable provisionals (carrier requires 100rel)', function () {
  this.timeout(60_000);
  const t = useCarrierSwitch({ did: '+254711970001', statusWebhook: false });
  before(async () => {
    // The document comes back after 2 s, so the call rings (reliable 180, PRACK) before it is answered.
    t.server.routes.set('/voice', () => ({ body: '<Response><Say>Hello.</Say><Hangup/></Response>', delayMs: 2000 }));
    await t.setInboundUrl(t.server.url('/voice'));
  });
  const lastCall = () => t.ctx.db('calls').where({ account_id: t.acct.id }).orderBy('created_at', 'desc').first();

  it('Require: 100rel: reliable 180 with RSeq, retransmitted until PRACK (200), then answered and completed', async () => {
    const run = (t.sipp = t.carrierCalls('uac-inbound-100rel.xml', undefined, ['-timeout', '30s']));
    assert.equal(await run.exited, 0, run.output());
    const [, retrans] = counts(run.output(), 180);
    assert.ok(retrans >= 1, `the 180 was retransmitted while no PRACK came (${retrans})\n${run.output()}`);
    const call = await eventually(async () => {
      const c = await lastCall();
      return c?.ended_at ? c : undefined;
    }, 'the call ended');
    assert.equal(call.status, 'completed');
    assert.ok(call.answered_at, 'answered');
  });

  it('an outbound trunk leg that gets a reliable 183 PRACKs it (RAck checked by the carrier), then is answered', async () => {
    const carrier = (t.sipp = runSipp([
      ...['-sf', path.join(SCENARIOS, 'uas-reliable-183.xml'), '-key', 'media_sink', String(t.sinkPort)],
      ...['-i', '127.0.0.1', '-p', String(t.carrierPort), '-m', '1', '-timeout', '30s'],
    ]));
    await waitForBound(t.carrierPort);
    t.server.verbs('/out', '<Response><Say>Hello there.</Say><Hangup/></Response>');
    const res = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/calls/originate', {
      to: '+254722000771',
      from: t.did,
      url: t.server.url('/out'),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(await carrier.exited, 0, carrier.output());
    const call = await eventually(async () => {
      const c = (await api(t.ctx.baseUrl, t.acct.key, 'GET', `/api/calls/${res.body.uuid}`)).body;
      return c?.ended_at ? c : undefined;
    }, 'the originated call ended');
    assert.equal(call.status, 'completed', JSON.stringify(call));
  });
});
