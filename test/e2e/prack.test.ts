/**
 * Issue 19 item 7, RFC 3262 where a carrier requires it: an INVITE from a trunk with Require: 100rel (refused with
 * 420 before) is taken; its 180 carries Require: 100rel and RSeq and is retransmitted until the carrier's PRACK,
 * which gets 200; the call is then answered and runs as any other.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  startTestSwitch,
  createAccountWithDid,
  addCarrier,
  AccountServer,
  runSipp,
  api,
  SCENARIOS,
  allocateSwitchPorts,
  type TestAccount,
} from './harness.js';
import { nextPort } from '../support/ports.js';
import { eventually, waitForBound } from '../support/wait.js';

const PORTS = allocateSwitchPorts();
const CARRIER = nextPort();
const SINK = nextPort();

/** SIPp's scenario screen: [messages, retransmissions] counted on the first line receiving `status`. */
function counts(output: string, status: number): [number, number] {
  const screen = output.slice(output.lastIndexOf('Scenario Screen'));
  const m = new RegExp(`^\\s*${status} <-+\\s+(\\d+)\\s+(\\d+)`, 'm').exec(screen);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

describe('e2e: RFC 3262 reliable provisionals (carrier requires 100rel)', function () {
  this.timeout(60_000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  const server = new AccountServer();

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    // The document comes back after 2 s, so the call rings (reliable 180, PRACK) before it is answered.
    server.routes.set('/voice', () => ({ body: '<Response><Say>Hello.</Say><Hangup/></Response>', delayMs: 2000 }));
    acct = await createAccountWithDid(ctx.db, '+254711970001');
    await ctx
      .db('accounts')
      .where({ id: acct.id })
      .update({ webhook_voice_inbound: server.url('/voice') });
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });
  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  it('Require: 100rel: reliable 180 with RSeq, retransmitted until PRACK (200), then answered and completed', async () => {
    const run = runSipp(
      [
        `127.0.0.1:${PORTS.sip}`,
        ...['-sf', path.join(SCENARIOS, 'uac-inbound-100rel.xml'), '-s', acct.did.replace(/^\+/, '')],
        ...['-key', 'media_sink', String(SINK)],
        ...['-i', '127.0.0.1', '-p', String(CARRIER), '-m', '1', '-timeout', '30s'],
      ],
      { limitMs: 40_000 },
    );
    assert.equal(await run.exited, 0, run.output());
    const [, retrans] = counts(run.output(), 180);
    assert.ok(retrans >= 1, `the 180 was retransmitted while no PRACK came (${retrans})\n${run.output()}`);
    const call = await eventually(async () => {
      const c = await ctx.db('calls').where({ account_id: acct.id }).orderBy('created_at', 'desc').first();
      return c?.ended_at ? c : undefined;
    }, 'the call ended');
    assert.equal(call.status, 'completed');
    assert.ok(call.answered_at, 'answered');
  });

  it('an outbound trunk leg that gets a reliable 183 PRACKs it (RAck checked by the carrier), then is answered', async () => {
    const carrier = runSipp(
      [
        ...['-sf', path.join(SCENARIOS, 'uas-reliable-183.xml'), '-key', 'media_sink', String(SINK)],
        ...['-i', '127.0.0.1', '-p', String(CARRIER), '-m', '1', '-timeout', '30s'],
      ],
      { limitMs: 40_000 },
    );
    await waitForBound(CARRIER);
    server.verbs('/out', '<Response><Say>Hello there.</Say><Hangup/></Response>');
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254722000771',
      from: acct.did,
      url: server.url('/out'),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(await carrier.exited, 0, carrier.output());
    const call = await eventually(async () => {
      const c = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${res.body.uuid}`)).body;
      return c?.ended_at ? c : undefined;
    }, 'the originated call ended');
    assert.equal(call.status, 'completed', JSON.stringify(call));
  });
});
