import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { waitForBound } from '../../support/wait.js';
import { decodeG711 } from '../../../media/g711.js';
import { toneEnergy } from '../../media/rtp-peer.js';
import { RtpSink, carrier, api, speakingCarrierScenario, speechUlawFile } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { nextPort, nextPorts } from '../../support/ports.js';

const CALLER_MEDIA = nextPorts(4); // a speaking caller's RTP (SIPp -mp)
const CALLEE_SINK = nextPort();
const CALLEE_SINK_2 = nextPort();

/** Issue 6 "done when", inbound side: carrier calls to DIDs, fallback, Redirect chain, Record. */
describe('e2e: inbound PSTN calls from a SIPp carrier', function () {
  this.timeout(60000);
  const DID = '+254711200001';
  // The carrier sends from 127.0.0.1 (SIPp at t.callerPort) and takes outbound legs (Dial) at t.carrierPort.
  const t = useCarrierSwitch({ did: DID });
  const { server } = t;
  let speech: string;

  before(async () => {
    // What the caller says in the Record test: real speech as raw mu-law for SIPp's rtp_stream.
    speech = speakingCarrierScenario(speechUlawFile('Hello, I am leaving a message for the test of recording.'));
  });

  async function lastCall() {
    const list = await api(t.ctx.baseUrl, t.acct.key, 'GET', '/api/calls/?limit=1');
    return list.body.calls[0];
  }

  it('a call to a DID runs the voice_inbound verbs: the caller hears the Say, the CDR is inbound and completed', async () => {
    server.verbs('/in', '<Response><Say>Welcome to the inbound test of Simu.</Say><Hangup/></Response>');
    await t.setInboundUrl(server.url('/in'));
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    await server.waitFor(() => server.statusEvents().includes('CALL.0300'), 10000, 'call.completed');
    const call = await lastCall();
    assert.equal(call.direction, 'inbound');
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
    assert.equal(call.to_number, DID);
    assert.equal(call.from_number, '+254733000009');
    const control = server.requests.find((r) => r.url === '/in')!.json;
    assert.equal(control.CallStatus, 'ringing');
    assert.equal(control.Direction, 'inbound');
    assert.equal(control.To, DID);
    assert.ok(t.sink.speechSeconds() >= 1.5, `heard ${t.sink.speechSeconds()} s`);
  });

  it('a caller whose BYE overtakes its ACK ends the call at once, END.0200 (the dialog exists from the 200)', async () => {
    server.verbs('/pause', '<Response><Say>Hello.</Say><Pause length="20"/></Response>');
    await t.setInboundUrl(server.url('/pause'));
    const started = Date.now();
    t.sipp = t.carrierCalls('uac-inbound-bye-before-ack.xml');
    assert.equal(await t.sipp.exited, 0, t.sipp.output()); // its BYE got 200
    await server.waitFor(() => server.statusEvents().includes('CALL.0300'), 10000, 'call.completed');
    const call = await lastCall();
    assert.equal(call.status, 'completed');
    assert.equal(call.reason_code, 'END.0200');
    assert.ok(Date.now() - started < 10000, 'at once, not when the 20 s Pause ran out');
  });

  it('each CDR is its instants rounded up: duration from arrival, talk from answer, talk never above duration', async () => {
    // An inbound call is answered a few ms after it arrives and these end a few ms past a whole second: a duration
    // rounded to nearest beside talk time rounded up showed N / N+1.
    const up = (from: string, to: string) => Math.ceil((Date.parse(to) - Date.parse(from)) / 1000);
    for (const pause of [1, 2]) {
      server.verbs(`/pause-${pause}`, `<Response><Pause length="${pause}"/><Hangup/></Response>`);
      await t.setInboundUrl(server.url(`/pause-${pause}`));
      t.sipp = t.carrierCalls();
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      const call = await t.lastCall();
      const seen = JSON.stringify(call);
      assert.equal(call.status, 'completed', seen);
      assert.equal(call.duration_seconds, up(call.started_at, call.ended_at), `duration: ${seen}`);
      assert.equal(call.talk_seconds, up(call.answered_at, call.ended_at), `talk: ${seen}`);
      assert.ok(call.talk_seconds <= call.duration_seconds, seen);
    }
  });

  it('a call to a number nobody owns gets 404 and is never answered', async () => {
    t.sipp = t.carrierCalls('uac-unknown.xml', '254799999999');
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
  });

  it('a webhook that fails triggers the fallback message, which the caller hears, and WH.0400', async () => {
    server.routes.set('/down', () => ({ status: 500, body: 'boom' }));
    await t.setInboundUrl(server.url('/down'));
    await t.ctx
      .db('accounts')
      .where({ id: t.acct.id })
      .update({ fallback_mode: 'message', fallback_value: 'Sorry, we cannot take your call right now.' });
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    // WH.* events go to the stream and the call's event log, not down the status route (events/index.ts).
    const events = await t.ctx.db('call_events').where({ account_id: t.acct.id, code: 'WH.0400' });
    assert.ok(events.length >= 1, 'webhook.failed recorded');
    assert.equal(JSON.parse(events[events.length - 1].data).fallback, 'message');
    assert.ok(t.sink.speechSeconds() >= 1, `fallback heard ${t.sink.speechSeconds()} s`);
    await t.ctx.db('accounts').where({ id: t.acct.id }).update({ fallback_mode: 'drop', fallback_value: '' });
  });

  it('a Redirect chain is followed to the document that speaks', async () => {
    server.verbs('/r1', `<Response><Redirect>${server.url('/r2')}</Redirect></Response>`);
    server.verbs('/r2', `<Response><Redirect>${server.url('/r3')}</Redirect></Response>`);
    server.verbs('/r3', '<Response><Say>You reached the end of the chain.</Say><Hangup/></Response>');
    await t.setInboundUrl(server.url('/r1'));
    const before = server.requests.length;
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const urls = server.requests
      .slice(before)
      .map((r) => r.url)
      .filter((u) => u.startsWith('/r'));
    assert.deepEqual(urls, ['/r1', '/r2', '/r3']);
    assert.ok(t.sink.speechSeconds() >= 1, `heard ${t.sink.speechSeconds()} s`);
  });

  it('Record captures what the caller said, calls the action with RecordingDuration and RecordingPath, and the recording downloads', async () => {
    server.verbs(
      '/rec',
      `<Response><Record action="${server.url('/after')}" maxLength="6" timeout="2" playBeep="false"/></Response>`,
    );
    server.verbs('/after', '<Response><Hangup/></Response>');
    await t.setInboundUrl(server.url('/rec'));
    t.sipp = t.carrierCalls(speech, DID.slice(1), ['-mp', String(CALLER_MEDIA)]);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const after = server.requests.find((r) => r.url === '/after')!.json;
    assert.ok(after.RecordingDuration >= 2, `RecordingDuration ${after.RecordingDuration}`);
    assert.ok(after.RecordingPath, 'RecordingPath');
    await server.waitFor(() => server.statusEvents().includes('REC.0300'), 10000, 'recording.completed');
    const call = await lastCall();
    const recs = await api(t.ctx.baseUrl, t.acct.key, 'GET', `/api/recordings/?call_uuid=${call.uuid}`);
    assert.equal(recs.body.length, 1);
    assert.ok(recs.body[0].duration_seconds >= 2);
    // Issue 22, item 13: the storage reference is the Recording's uuid, not a path on the server.
    assert.equal(after.RecordingPath, recs.body[0].uuid);
    const dl = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/recordings/download', { uuid: recs.body[0].uuid });
    assert.equal(dl.status, 200, JSON.stringify(dl.body));
    const url = dl.body.url as string;
    const media = await fetch(url);
    assert.equal(media.status, 200);
    assert.match(media.headers.get('content-type') ?? '', /audio\/wav/);
    const wav = Buffer.from(await media.arrayBuffer());
    assert.equal(wav.subarray(0, 4).toString(), 'RIFF');
    assert.ok(wav.length > 44 + 8000 * 2, `a WAV of ${wav.length} bytes holds over a second of audio`);
    // And it is what the caller said, not silence: 20 ms frames at speech level.
    const samples = new Int16Array(wav.buffer, wav.byteOffset + 44, Math.floor((wav.length - 44) / 2));
    let loud = 0;
    for (let i = 0; i + 160 <= samples.length; i += 160) {
      let sum = 0;
      for (let j = i; j < i + 160; j++) sum += samples[j] * samples[j];
      if (Math.sqrt(sum / 160) > 300) loud++;
    }
    assert.ok(loud * 0.02 >= 1, `speech in the recording: ${(loud * 0.02).toFixed(2)} s`);
  });

  it('a key of finishOnKey (RFC 4733 from the caller) ends Record early, and the recording is kept', async () => {
    server.verbs(
      '/keyed',
      `<Response><Record action="${server.url('/keyed-after')}" maxLength="30" timeout="15" finishOnKey="1#" playBeep="false"/></Response>`,
    );
    server.verbs('/keyed-after', '<Response><Hangup/></Response>');
    await t.setInboundUrl(server.url('/keyed'));
    // The caller speaks (about 3.5 s), then presses 1 (SIPp's RFC 2833 capture), then waits for our BYE.
    const keyed = speech.replace(/\.xml$/, '-key.xml');
    writeFileSync(
      keyed,
      readFileSync(speech, 'utf8').replace(
        '<recv request="BYE" />',
        '<pause milliseconds="4000"/><nop><action><exec play_pcap_audio="/usr/share/sip-tester/dtmf_2833_1.pcap"/>' +
          '</action></nop><recv request="BYE" />',
      ),
    );
    const before = server.requests.length;
    t.sipp = t.carrierCalls(keyed, DID.slice(1), ['-mp', String(CALLER_MEDIA)]);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const after = server.requests.slice(before).find((r) => r.url === '/keyed-after')?.json;
    assert.ok(after, 'the action was requested');
    // Ended by the key: silence (15 s) or maxLength (30 s) would have made it far longer.
    assert.ok(
      after.RecordingDuration >= 2 && after.RecordingDuration <= 8,
      `RecordingDuration ${after.RecordingDuration}`,
    );
  });

  it('Record plays its beep (1 kHz) to the caller first', async () => {
    server.verbs('/beep', '<Response><Record maxLength="2" timeout="1"/></Response>');
    await t.setInboundUrl(server.url('/beep'));
    t.sipp = t.carrierCalls(); // a silent caller: what it hears comes to our t.sink
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const heard = decodeG711(Buffer.concat(t.sink.payloads), 0);
    assert.ok(toneEnergy(heard, 1000) > 1000, `a 1 kHz tone (energy ${toneEnergy(heard, 1000).toFixed(0)})`);
  });

  it('RecordSession records the whole call: the caller on the left, the Say it heard on the right, REC.0100 and REC.0300', async () => {
    server.verbs(
      '/recorded',
      '<Response><RecordSession/><Say>This call is recorded for quality purposes. Thank you.</Say><Pause length="1"/><Hangup/></Response>',
    );
    await t.setInboundUrl(server.url('/recorded'));
    const before = server.requests.length;
    t.sipp = t.carrierCalls(speech, DID.slice(1), ['-mp', String(CALLER_MEDIA)]);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    await server.waitFor(
      () => server.requests.slice(before).some((r) => r.json?.code === 'REC.0300'),
      10000,
      'recording.completed',
    );
    const codes = server.requests.slice(before).map((r) => r.json?.code);
    assert.ok(codes.indexOf('REC.0100') >= 0 && codes.indexOf('REC.0100') < codes.indexOf('REC.0300'), codes.join());
    const call = await lastCall();
    const recs = await api(t.ctx.baseUrl, t.acct.key, 'GET', `/api/recordings/?call_uuid=${call.uuid}`);
    assert.equal(recs.body.length, 1);
    assert.ok(recs.body[0].duration_seconds >= 3, `duration ${recs.body[0].duration_seconds}`);
    const dl = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/recordings/download', { uuid: recs.body[0].uuid });
    const wav = Buffer.from(await (await fetch(dl.body.url as string)).arrayBuffer());
    assert.equal(wav.readUInt16LE(22), 2, 'two channels');
    const samples = new Int16Array(wav.buffer, wav.byteOffset + 44, Math.floor((wav.length - 44) / 2));
    const speechSeconds = (ch: number) => {
      let loud = 0;
      for (let i = ch; i + 320 <= samples.length; i += 320) {
        let sum = 0;
        for (let j = i; j < i + 320; j += 2) sum += samples[j] * samples[j];
        if (Math.sqrt(sum / 160) > 300) loud++;
      }
      return loud * 0.02;
    };
    assert.ok(speechSeconds(0) >= 1, `the caller's speech on the left: ${speechSeconds(0).toFixed(2)} s`);
    assert.ok(speechSeconds(1) >= 1.5, `the Say on the right: ${speechSeconds(1).toFixed(2)} s`);
  });

  it('Dial to a PSTN number bridges the caller to the dialled leg: the callee hears the caller, DIAL.0200 and DIAL.0300', async () => {
    server.verbs(
      '/dial',
      `<Response><Dial timeout="10" timeLimit="4" callerId="${DID}"><Number>+254722000099</Number></Dial></Response>`,
    );
    await t.setInboundUrl(server.url('/dial'));
    const callee = await new RtpSink().bind(CALLEE_SINK);
    const uas = carrier({ port: t.carrierPort, sink: CALLEE_SINK });
    try {
      await waitForBound(t.carrierPort); // SIPp's port
      const before = server.requests.length;
      t.sipp = t.carrierCalls(speech, DID.slice(1), ['-mp', String(CALLER_MEDIA)]);
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      assert.equal(await uas.exited, 0, uas.output());
      await server.waitFor(
        () => server.requests.slice(before).some((r) => r.json?.code === 'CALL.0300'),
        10000,
        'call.completed',
      );
      const codes = server.requests.slice(before).map((r) => r.json?.code);
      assert.ok(codes.includes('DIAL.0200') && codes.includes('DIAL.0300'), codes.join(','));
      const dialDone = server.requests.slice(before).find((r) => r.json?.code === 'DIAL.0300')!.json;
      assert.equal(dialDone.data.DialCallStatus, 'completed');
      assert.ok(callee.speechSeconds() >= 1, `the callee heard the caller for ${callee.speechSeconds()} s`);
      // The dialled PSTN leg has a CDR of its own, billed at the outbound rate, not carried at the inbound one.
      const parent = await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first();
      const leg = await t.ctx.db('calls').where({ parent_call_id: parent.id }).first();
      assert.equal(leg.direction, 'outbound');
      assert.equal(leg.to_number, '+254722000099');
      assert.equal(leg.from_number, DID, 'the callerId the account owns is presented');
      assert.equal(leg.status, 'completed');
      const charged = (await t.ctx.db('wallet_transactions').where({ call_id: leg.id })).reduce(
        (sum: number, r: { amount_cents: number }) => sum + Number(r.amount_cents),
        0,
      );
      assert.ok(charged >= 100, `the leg paid at least its first outbound minute: ${charged}`);
      assert.equal(Number(leg.cost_cents), charged);
    } finally {
      uas.kill();
      callee.close();
    }
  });

  it('when the dialled party hangs up, the Dial action gets completed and its duration, and the caller hears the next document', async () => {
    server.verbs(
      '/dial-then',
      `<Response><Dial action="${server.url('/after-bridge')}" timeout="10" record="record-from-answer">` +
        '<Number>+254722000098</Number></Dial>' +
        '<Say>This verb is replaced by the action document.</Say></Response>',
    );
    server.verbs(
      '/after-bridge',
      '<Response><Say>The other party has left the call. Thank you for calling.</Say><Hangup/></Response>',
    );
    await t.setInboundUrl(server.url('/dial-then'));
    const callee = await new RtpSink().bind(CALLEE_SINK_2);
    const uas = carrier({
      port: t.carrierPort,
      sink: CALLEE_SINK_2,
      scenario: 'uas-answer-hangup.xml',
      extra: ['-d', '2500'],
    });
    try {
      await waitForBound(t.carrierPort); // SIPp's port
      const before = server.requests.length;
      // A silent caller: rtpengine then sends the caller's audio to the address in its SDP (our t.sink) rather than
      // latching on to the port a speaking SIPp sends from (the test above proves the bridge carries speech).
      t.sipp = t.carrierCalls();
      await server.waitFor(
        () => server.requests.slice(before).some((r) => r.url === '/after-bridge'),
        20000,
        'the Dial action request',
      );
      t.sink.payloads.length = 0; // from here on, what the caller hears is the action document
      assert.equal(await uas.exited, 0, uas.output());
      assert.equal(await t.sipp.exited, 0, t.sipp.output());
      const after = server.requests.slice(before).find((r) => r.url === '/after-bridge')!.json;
      assert.equal(after.DialCallStatus, 'completed');
      assert.ok(
        after.DialCallDuration >= 2 && after.DialCallDuration <= 4,
        `DialCallDuration ${after.DialCallDuration}`,
      );
      assert.ok(t.sink.speechSeconds() >= 1.5, `the caller heard the action's Say for ${t.sink.speechSeconds()} s`);
      await server.waitFor(
        () => server.requests.slice(before).some((r) => r.json?.code === 'CALL.0300'),
        10000,
        'call.completed',
      );
      const parent = await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first();
      assert.equal(parent.status, 'completed');
      const leg = await t.ctx.db('calls').where({ parent_call_id: parent.id }).first();
      assert.equal(leg.status, 'completed');
      assert.ok(Number(parent.duration_seconds) > Number(leg.duration_seconds), 'the caller stayed on after the leg');
      // record="record-from-answer": one mono recording of the call from the answer on, announced by REC.0300.
      await server.waitFor(
        () => server.requests.slice(before).some((r) => r.json?.code === 'REC.0300'),
        10000,
        'recording.completed',
      );
      const recs = await api(t.ctx.baseUrl, t.acct.key, 'GET', `/api/recordings/?call_uuid=${parent.id}`);
      assert.equal(recs.body.length, 1);
      const dl = await api(t.ctx.baseUrl, t.acct.key, 'POST', '/api/recordings/download', { uuid: recs.body[0].uuid });
      const wav = Buffer.from(await (await fetch(dl.body.url as string)).arrayBuffer());
      assert.equal(wav.readUInt16LE(22), 1, 'mono');
      assert.ok(recs.body[0].duration_seconds >= 3, `from the answer to the end: ${recs.body[0].duration_seconds} s`);
    } finally {
      uas.kill();
      callee.close();
    }
  });

  it('a Dial presenting a callerId the account does not own is not dialled: DialCallStatus=failed, the call goes on', async () => {
    server.verbs(
      '/spoof',
      `<Response><Dial action="${server.url('/after-spoof')}" callerId="+254799999999"><Number>+254722000097</Number></Dial></Response>`,
    );
    server.verbs('/after-spoof', '<Response><Say>That caller ID cannot be used.</Say><Hangup/></Response>');
    await t.setInboundUrl(server.url('/spoof'));
    const before = server.requests.length;
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const after = server.requests.slice(before).find((r) => r.url === '/after-spoof')!.json;
    assert.equal(after.DialCallStatus, 'failed');
    const done = server.requests.slice(before).find((r) => r.json?.code === 'DIAL.0300')!.json;
    assert.equal(done.data.reason, 'CALLER_ID_NOT_OWNED');
    const parent = await t.ctx.db('calls').where({ to_number: DID }).orderBy('created_at', 'desc').first();
    assert.equal((await t.ctx.db('calls').where({ parent_call_id: parent.id })).length, 0, 'nothing was dialled');
    assert.ok(t.sink.speechSeconds() >= 1, `the call went on: ${t.sink.speechSeconds()} s heard`);
  });

  it('a Dial outside the allowlist is not dialled: DIAL.0403, the action gets DialCallStatus=failed, the call goes on', async () => {
    await t.ctx.db('destination_rules').insert({
      id: crypto.randomUUID(),
      account_id: t.acct.id,
      kind: 'allow',
      prefix: '2547',
      created_at: new Date().toISOString(),
    });
    server.verbs(
      '/blocked',
      `<Response><Dial action="${server.url('/after-dial')}"><Number>+882100000001</Number></Dial></Response>`,
    );
    server.verbs(
      '/after-dial',
      '<Response><Say>The number you dialled cannot be reached from this account.</Say><Hangup/></Response>',
    );
    await t.setInboundUrl(server.url('/blocked'));
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const after = server.requests.find((r) => r.url === '/after-dial')!.json;
    assert.equal(after.DialCallStatus, 'failed');
    assert.equal(after.DialCallDuration, 0);
    const blocked = await t.ctx.db('call_events').where({ account_id: t.acct.id, code: 'DIAL.0403' });
    assert.equal(blocked.length, 1);
    assert.ok(t.sink.speechSeconds() >= 1, `the call went on and was heard: ${t.sink.speechSeconds()} s`);
    await t.ctx.db('destination_rules').where({ account_id: t.acct.id }).delete();
  });
});
