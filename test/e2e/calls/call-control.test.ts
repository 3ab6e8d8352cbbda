import assert from 'node:assert/strict';
import { parseRtp } from '../../../media/rtp-packet.js';
import { nextPort } from '../../support/ports.js';
import { eventually, waitForBound } from '../../support/wait.js';
import {
  AccountServer,
  RtpSink,
  addCarrier,
  allocateSwitchPorts,
  api,
  carrier,
  carrierCallsDid,
  createAccountWithDid,
  startTestSwitch,
  type SippRun,
  type TestAccount,
} from '../support/harness.js';

const PORTS = allocateSwitchPorts();
const SINK = nextPort();
const CALLER = nextPort();
const CARRIER = nextPort();
const CALLEE_SINK = nextPort();

/** RFC 4733 events in packets of payload type 101 (what the SIPp carrier's SDP names), one per event, in order. */
class EventLog {
  readonly keys: string[] = [];
  #last: number | undefined;
  constructor(sink: RtpSink) {
    sink.socket.on('message', (msg) => {
      const p = parseRtp(msg);
      if (!p || p.payloadType !== 101 || p.timestamp === this.#last) return;
      this.#last = p.timestamp;
      this.keys.push('0123456789*#ABCD'[p.payload[0] ?? 0] ?? '?');
    });
  }
}

/**
 * Issue 16 item 5, done when: REST control of a live call with real peers. A SIPp carrier calls a DID whose verbs
 * hold it in a 60 s Pause; POST /api/calls/{uuid}/update moves it to a document whose Say the caller hears (speech
 * energy in the RTP the carrier received), by inline twiml and by url; the redirect is CALL.0210 on the call;
 * an Idempotency-Key replay moves it once; another account gets 404, an ended call 409. POST /digits reaches the
 * carrier as RFC 4733 telephone-events.
 */
describe('e2e: live call control over REST (update, digits)', function () {
  this.timeout(90000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  let acct: TestAccount;
  let stranger: TestAccount;
  const server = new AccountServer();
  let sink: RtpSink;
  let sipp: SippRun | undefined;
  const DID = '+254711300001';

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    acct = await createAccountWithDid(ctx.db, DID);
    stranger = await createAccountWithDid(ctx.db, '+254711300002');
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
    server.verbs('/hold', '<Response><Pause length="60"/><Say>This is never said.</Say></Response>');
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/hold') });
  });

  beforeEach(async () => {
    sink = await new RtpSink().bind(SINK);
  });

  afterEach(() => {
    sipp?.kill();
    sink.close();
  });

  after(async () => {
    await server.close();
    await ctx?.sw.stop();
  });

  /** A carrier call to the DID, held in the Pause: its uuid once answered. */
  async function heldCall(): Promise<string> {
    const before = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls?limit=1&direction=inbound')).body.calls[0]
      ?.uuid;
    sipp = carrierCallsDid({ sip: PORTS.sip, did: DID, port: CALLER, sink: SINK });
    let uuid = '';
    for (let i = 0; i < 200; i += 1) {
      const last = (await api(ctx.baseUrl, acct.key, 'GET', '/api/calls?limit=1&direction=inbound')).body.calls[0];
      if (last && last.uuid !== before && last.status === 'answered') {
        uuid = last.uuid;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(uuid, 'the call was answered');
    return uuid;
  }

  const redirects = async (uuid: string) =>
    (await ctx.db('call_events').where({ call_id: uuid, code: 'CALL.0210' })).length;

  it('a call in a 60 s Pause is moved by inline twiml to a Say the caller hears; once per Idempotency-Key', async () => {
    const uuid = await heldCall();
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(sink.speechSeconds() < 0.2, `silence during the Pause (${sink.speechSeconds()} s)`);
    const twiml =
      '<Response><Say>You were moved to this message by the call control interface.</Say><Hangup/></Response>';
    const headers = { 'idempotency-key': `move-${uuid}` };
    const started = Date.now();
    const r = await fetch(`${ctx.baseUrl}/api/calls/${uuid}/update`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ twiml }),
    });
    assert.equal(r.status, 200, await r.text());
    const replay = await fetch(`${ctx.baseUrl}/api/calls/${uuid}/update`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ twiml }),
    });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(await sipp!.exited, 0, sipp!.output());
    const tookMs = Date.now() - started;
    assert.ok(tookMs < 20000, `the call ended ${tookMs} ms after the update, not after the 60 s Pause`);
    assert.ok(sink.speechSeconds() >= 1.5, `the caller heard ${sink.speechSeconds()} s of the new Say`);
    assert.equal(await redirects(uuid), 1, 'one CALL.0210: the replay did not move the call again');
    const call = (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body;
    assert.equal(call.status, 'completed');
    // The call has ended: 409; another account: 404.
    const late = await api(ctx.baseUrl, acct.key, 'POST', `/api/calls/${uuid}/update`, { twiml });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'CALL_ENDED');
    const theirs = await api(ctx.baseUrl, stranger.key, 'POST', `/api/calls/${uuid}/update`, { twiml });
    assert.equal(theirs.status, 404);
  });

  it('update with a url fetches the new document now (signed call-control request) and the caller hears it', async () => {
    server.verbs('/moved', '<Response><Say>This document was fetched after the update request.</Say></Response>');
    const uuid = await heldCall();
    const theirs = await api(ctx.baseUrl, stranger.key, 'POST', `/api/calls/${uuid}/update`, {
      url: server.url('/moved'),
    });
    assert.equal(theirs.status, 404, 'another account cannot move the call');
    const r = await api(ctx.baseUrl, acct.key, 'POST', `/api/calls/${uuid}/update`, { url: server.url('/moved') });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(await sipp!.exited, 0, sipp!.output());
    const fetched = server.requests.filter((q) => q.url === '/moved');
    assert.equal(fetched.length, 1);
    assert.equal(fetched[0]!.json.CallSid, (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body.sid);
    assert.ok(sink.speechSeconds() >= 1.5, `heard ${sink.speechSeconds()} s`);
  });

  it('a bridged Dial is ended by the update: the dialled leg gets a BYE, the caller hears the new Say', async () => {
    server.verbs(
      '/dial',
      `<Response><Dial callerId="${DID}">+254722000099</Dial><Say>Never said after the Dial.</Say></Response>`,
    );
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/dial') });
    const callee = await new RtpSink().bind(CALLEE_SINK);
    const uas = carrier({ port: CARRIER, sink: CALLEE_SINK });
    try {
      await waitForBound(CARRIER);
      const uuid = await heldCall();
      await eventually(
        async () => (await ctx.db('call_events').where({ call_id: uuid, code: 'DIAL.0200' })).length === 1,
        'the Dial answered',
        15000,
      ).catch(async (e) => {
        const codes = (await ctx.db('call_events').where({ call_id: uuid })).map((r: any) => `${r.code} ${r.data}`);
        throw new Error(`${e.message}: ${codes.join(' | ')} ${uas.output()}`);
      });
      const twiml = '<Response><Say>The bridge was ended and you are back with the platform.</Say></Response>';
      const r = await api(ctx.baseUrl, acct.key, 'POST', `/api/calls/${uuid}/update`, { twiml });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(await uas.exited, 0, `the dialled leg got a BYE: ${uas.output()}`);
      assert.equal(await sipp!.exited, 0, sipp!.output());
      assert.ok(sink.speechSeconds() >= 1.5, `the caller heard ${sink.speechSeconds()} s of the new Say`);
      const leg = await ctx.db('calls').where({ parent_call_id: uuid }).first();
      assert.equal(leg.status, 'completed');
    } finally {
      uas.kill();
      callee.close();
      await ctx
        .db('numbers')
        .where({ number: DID })
        .update({ webhook_voice_inbound: server.url('/hold') });
    }
  });

  it('digits reach the far end as RFC 4733 telephone-events, in order', async () => {
    const events = new EventLog(sink);
    const uuid = await heldCall();
    const r = await api(ctx.baseUrl, acct.key, 'POST', `/api/calls/${uuid}/digits`, { digits: '1w#9' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await server.waitFor(() => events.keys.length >= 3, 3000, 'three events at the carrier');
    assert.deepEqual(events.keys, ['1', '#', '9']);
    const hang = await api(ctx.baseUrl, acct.key, 'POST', '/api/calls/hangup', {
      sid: (await api(ctx.baseUrl, acct.key, 'GET', `/api/calls/${uuid}`)).body.sid,
    });
    assert.equal(hang.status, 200);
    assert.equal(await sipp!.exited, 0, sipp!.output());
  });
});
