import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { WebSocket } from 'ws';
import { waitForBound } from '../../support/wait.js';
import {
  AccountServer,
  RtpSink,
  addCarrier,
  api,
  carrier,
  createAccountWithDid,
  startTestSwitch,
  type SippRun,
  allocateSwitchPorts,
} from '../support/harness.js';
import { nextPort } from '../../support/ports.js';

const PORTS = allocateSwitchPorts();
const SINK = nextPort();
const CARRIER = nextPort();

/**
 * Issue 15, items 1 and 7, through the whole switch (SIPp as the carrier, the account's server a real HTTP server):
 * - every webhook (the call-control request, an action callback and the status callbacks) verifies with an HMAC
 *   the receiver computes itself over what it received, `http://` + Host + request target, + timestamp + body,
 *   although the URLs were configured as `HTTP://...`, with a non-ASCII path, an escaped `/`, a fragment and a
 *   bare `?`;
 * - a document with attributes Simu does not know runs, and each unknown (element, attribute) reaches the event
 *   stream once for the call as VERB.0299.
 */
describe('e2e: webhook signatures and ignored verb attributes', function () {
  this.timeout(60000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  const server = new AccountServer();
  const sink = new RtpSink();
  let sipp: SippRun | undefined;
  let ws: WebSocket | undefined;

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    await sink.bind(SINK);
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
  });
  after(async () => {
    ws?.terminate();
    sipp?.kill();
    sink.close();
    await server.close();
    await ctx?.sw.stop();
  });

  it('call control, action callback and status callbacks verify; unknown attributes are ignored and reported once', async () => {
    const acct = await createAccountWithDid(ctx.db, '+254711500001');
    const port = new URL(server.url('/')).port;
    const status = await api(ctx.baseUrl, acct.key, 'POST', '/api/account/webhooks', {
      purpose: 'status',
      url: `HTTP://127.0.0.1:${port}/status?#fragment`,
    });
    assert.equal(status.status, 200, JSON.stringify(status.body));

    // As the receiver sees the paths (Node's req.url: the request target as sent).
    const voicePath = '/voice/caf%C3%A9%20menu/a%2Fb';
    const nextPath = '/next/%C3%BC';
    server.verbs(
      voicePath,
      `<Response><Say rate="fast" voice="woman">Hello</Say><Pause length="1" foo="x"/>` +
        `<Redirect method="POST">HTTP://127.0.0.1:${port}/next/\u00fc#top</Redirect></Response>`,
    );
    server.verbs(
      nextPath,
      '<Response><Say rate="slow">Bye</Say><Hangup statusCallback="https://x.example/"/></Response>',
    );

    const token = await api(ctx.baseUrl, acct.key, 'POST', '/api/stream/token');
    const frames: Array<{ code: string; data?: Record<string, unknown> }> = [];
    ws = new WebSocket(`ws://127.0.0.1:${PORTS.http}/api/stream?token=${token.body.token}`);
    ws.on('message', (m) => frames.push(JSON.parse(String(m))));
    await new Promise((resolve, reject) => ws!.once('open', resolve).once('error', reject));

    sipp = carrier({ port: CARRIER, sink: SINK });
    await waitForBound(CARRIER);
    const res = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/originate', {
      to: '+254722500001',
      from: acct.did,
      url: `HTTP://127.0.0.1:${port}/voice/caf\u00e9 menu/a%2Fb?#start`,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await server.waitFor(() => server.statusEvents().includes('CALL.0300'), 30000, 'call.completed');

    const secret = (await ctx.db('accounts').where({ id: acct.id }).first()).signing_secret as string;
    const verified = (r: (typeof server.requests)[number]) => {
      const ts = String(r.headers['x-voice-timestamp']);
      const rebuilt = `http://${r.headers.host}${r.url}`;
      const mine = createHmac('sha256', secret).update(`${rebuilt}${ts}${r.body}`, 'utf8').digest('base64');
      return mine === r.headers['x-voice-signature'];
    };
    const kinds = {
      control: server.requests.filter((r) => r.url === voicePath),
      action: server.requests.filter((r) => r.url === nextPath),
      status: server.requests.filter((r) => r.url === '/status'),
    };
    assert.equal(kinds.control.length, 1, JSON.stringify(server.requests.map((r) => r.url)));
    assert.equal(kinds.action.length, 1);
    assert.ok(kinds.status.length >= 3, `${kinds.status.length} status callbacks`);
    for (const [kind, list] of Object.entries(kinds)) {
      for (const r of list) assert.ok(verified(r), `${kind} ${r.url} ${r.json?.code ?? ''} verifies`);
    }

    // The document ran whole (Say, Pause, Redirect, Say, Hangup): no fallback, no WH.0400.
    assert.ok(!frames.some((f) => f.code === 'WH.0400'), JSON.stringify(frames.filter((f) => f.code === 'WH.0400')));
    const ignored = frames.filter((f) => f.code === 'VERB.0299').map((f) => `${f.data?.element}@${f.data?.attribute}`);
    assert.deepEqual(ignored.sort(), ['Hangup@statusCallback', 'Pause@foo', 'Say@rate']);
    assert.ok(!server.statusEvents().includes('VERB.0299'), 'VERB.0299 is not a status callback');
    assert.equal(await sipp.exited, 0, sipp.output());
  });
});
