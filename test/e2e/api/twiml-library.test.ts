import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import twilio from 'twilio';
import { WebSocketServer } from 'ws';
import { EspeakTtsEngine } from '../../../media/index.js';
import { VERB_REGISTRY, VerbTaskBase, type VerbOutcome } from '../../../verbs/index.js';
import { nextPort } from '../../support/ports.js';
import { waitForBound } from '../../support/wait.js';
import { api, carrier } from '../support/harness.js';
import { useCarrierSwitch } from '../support/carrier-switch.js';
import { tempDir } from '../../media/helpers.js';

const { VoiceResponse } = twilio.twiml;
/** Where the dialled carrier leg's media goes (nobody listens). */
const CALLEE_SINK = nextPort();

/**
 * Documents written by Twilio's own helper library (npm `twilio`) and TwiML as its developers write it, through the
 * real switch: a SIPp carrier calls the account's DID, real espeak-ng speaks, and what the carrier heard is counted.
 * - Say with a voice the platform does not have (Polly.*, "en", a language espeak-ng lacks) speaks, with the
 *   nearest voice or the default, and reports each unknown name once per call (VERB.0299); never SYS.0500.
 * - SSML inside Say (break, emphasis, prosody ...) is spoken: TTS seconds on the record, speech heard.
 * - A verb that fails inside the platform gives the caller the account's fallback message, SYS.0500 with a trace
 *   id, and the reason SYS.0500 on the record.
 * - Every verb the library writes for the verbs Simu has runs to its end, with no SYS.0500 and no fallback.
 */
describe('e2e: TwiML from the twilio library, voices, SSML and platform failures', function () {
  this.timeout(180_000);
  const t = useCarrierSwitch({
    did: '+254711600001',
    account: { fallback_mode: 'message', fallback_value: 'We are sorry, please call again later.' },
  });
  let audio: Server;
  let wss: WebSocketServer;
  const streamMessages: string[] = [];
  let data: ReturnType<typeof tempDir>;

  before(async () => {
    data = tempDir('twiml-library');
    const wav = await new EspeakTtsEngine({ cacheDir: `${data.dir}/tts` }).synthesize({ text: 'A recorded prompt.' });
    const wavBytes = readFileSync(wav.path);
    audio = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(wavBytes);
    });
    await new Promise<void>((r) => audio.listen(0, '127.0.0.1', () => r()));
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    wss.on('connection', (ws) => ws.on('message', (m) => streamMessages.push(JSON.parse(String(m)).event)));
    await new Promise<void>((r) => wss.once('listening', () => r()));
  });
  after(async () => {
    t.ctx.sw.calls!.verbRegistry = VERB_REGISTRY;
    audio?.close();
    wss?.close();
    data?.remove();
  });

  const audioUrl = () => `http://127.0.0.1:${(audio.address() as AddressInfo).port}/prompt.wav`;
  const streamUrl = () => `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/listen`;

  /** The carrier calls the DID answered by `path`; the call's record and its event codes once it has ended. */
  async function callThrough(path: string) {
    await t.setInboundUrl(t.server.url(path));
    t.sipp = t.carrierCalls();
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    // The caller's own record: a Dial's leg is a newer call of the account.
    let call = await t.lastCall();
    if (call.direction !== 'inbound') {
      const list = await api(t.ctx.baseUrl, t.acct.key, 'GET', '/api/calls?limit=1&direction=inbound');
      call = list.body.calls[0];
    }
    const events = await t.ctx.db('call_events').where({ call_id: call.uuid }).orderBy('created_at');
    const codes = events.map((e: { code: string }) => e.code);
    return { call, events, codes };
  }

  const assertNormal = (r: Awaited<ReturnType<typeof callThrough>>) => {
    assert.ok(!r.codes.includes('SYS.0500'), `no SYS.0500: ${r.codes.join(' ')}`);
    assert.ok(!r.codes.includes('WH.0400'), `no fallback: ${r.codes.join(' ')}`);
    assert.equal(r.call.reason_code, 'END.0200', JSON.stringify(r.call));
  };

  it('voices the platform lacks speak with the nearest or the default voice; each unknown name once', async () => {
    t.server.verbs(
      '/voices',
      '<Response><Say voice="Polly.Joanna">Hello from the Polly voice.</Say>' +
        '<Say voice="en">This voice name is unknown.</Say><Say voice="en">Said again.</Say>' +
        '<Say language="xx-YY" voice="man">A language nobody has.</Say>' +
        '<Say voice="Google.en-GB-Wavenet-B" language="en">Google voice.</Say></Response>',
    );
    const r = await callThrough('/voices');
    assertNormal(r);
    assert.ok(Number(r.call.tts_seconds) >= 4, `tts_seconds ${r.call.tts_seconds}`);
    assert.equal(r.codes.filter((c: string) => c === 'TTS.0200').length, 5);
    const ignored = r.events
      .filter((e: { code: string }) => e.code === 'VERB.0299')
      .map((e: { data: string }) => JSON.parse(e.data))
      .map((d: { attribute: string; value: string }) => `${d.attribute}=${d.value}`);
    assert.deepEqual(ignored.sort(), ['language=xx-YY', 'voice=en']);
    assert.ok(t.sink.speechSeconds() >= 4, `the caller heard ${t.sink.speechSeconds()} s`);
  });

  it('SSML inside Say is spoken by espeak-ng: TTS seconds billed, speech heard, the markup not read out', async () => {
    t.server.verbs(
      '/ssml',
      '<Response><Say>Hello<break time="800ms"/><emphasis level="strong">world</emphasis>' +
        '<prosody rate="slow">spoken slowly</prosody><unknown-tag>and this text too</unknown-tag></Say></Response>',
    );
    const r = await callThrough('/ssml');
    assertNormal(r);
    assert.ok(Number(r.call.tts_seconds) >= 2, `tts_seconds ${r.call.tts_seconds}`);
    assert.ok(t.sink.speechSeconds() >= 1.5, `the caller heard ${t.sink.speechSeconds()} s`);
  });

  it("a verb failing inside the platform: the account's fallback message, SYS.0500 with a trace id, reason SYS.0500", async () => {
    class BrokenPause extends VerbTaskBase {
      readonly name = 'Pause' as const;
      async exec(): Promise<VerbOutcome> {
        throw new TypeError('an injected failure inside the platform');
      }
    }
    t.ctx.sw.calls!.verbRegistry = { ...VERB_REGISTRY, Pause: BrokenPause };
    try {
      t.server.verbs('/broken', '<Response><Pause length="1"/><Say>This is never said.</Say></Response>');
      const r = await callThrough('/broken');
      assert.equal(r.call.reason_code, 'SYS.0500', JSON.stringify(r.call));
      const sys = r.events.find((e: { code: string }) => e.code === 'SYS.0500');
      assert.ok(sys, r.codes.join(' '));
      assert.match(JSON.parse(sys.data).traceId, /^[0-9a-f]{32}$/);
      assert.ok(!r.codes.includes('END.0200'));
      // The fallback message was spoken (and billed as speech), and the caller heard it.
      assert.ok(Number(r.call.tts_seconds) >= 2, `tts_seconds ${r.call.tts_seconds}`);
      assert.ok(t.sink.speechSeconds() >= 1.5, `the caller heard ${t.sink.speechSeconds()} s of the fallback`);
      const completed = t.server.requests.filter((q) => q.url === '/status' && q.json?.code === 'CALL.0300');
      assert.equal(completed.at(-1)?.json?.data?.reason_code, 'SYS.0500');
    } finally {
      t.ctx.sw.calls!.verbRegistry = VERB_REGISTRY;
    }
  });

  it('every verb the twilio library writes runs to its end: no SYS.0500, no fallback', async () => {
    const url = (p: string) => t.server.url(p);
    const start = new VoiceResponse();
    const say = start.say({ voice: 'Polly.Joanna', language: 'en-US', loop: 2 }, 'Welcome.');
    say.break({ time: '300ms' });
    say.emphasis({ level: 'strong' }, 'Important');
    say.prosody({ rate: 'slow', pitch: '+10%' }, 'slowly');
    say.sayAs({ 'interpret-as': 'characters' }, 'abc');
    say.sub({ alias: 'World Wide Web' }, 'WWW');
    say.lang({ 'xml:lang': 'fr-FR' }, 'bonjour');
    say.w({ role: 'amazon:VB' }, 'read');
    say.p('A paragraph.');
    say.s('A sentence.');
    say.phoneme({ alphabet: 'ipa', ph: 'pɪˈkɑːn' }, 'pecan');
    start.say({ voice: 'alice', language: 'en-GB' }, 'Alice speaks.');
    start.say({ voice: 'woman', language: 'sw-KE' as 'en-US' }, 'Karibu.'); // a tag the library's type lacks
    start.play(audioUrl());
    start.pause({ length: 1 });
    const gather = start.gather({ input: ['dtmf'], numDigits: 1, timeout: 1, action: url('/t/gathered') });
    gather.say({ voice: 'Polly.Matthew' }, 'Press one.');
    start.redirect(url('/t/gathered')); // nothing pressed: TwiML goes on with the next verb
    t.server.verbs('/t/start', start.toString());

    const gathered = new VoiceResponse();
    gathered.record({ maxLength: 2, timeout: 1, playBeep: true, action: url('/t/recorded') });
    gathered.redirect(url('/t/recorded')); // nothing recorded (a silent caller): the next verb
    t.server.verbs('/t/gathered', gathered.toString());

    const recorded = new VoiceResponse();
    recorded.start().stream({ name: 'fork', url: streamUrl() });
    recorded.pause({ length: 1 });
    recorded.stop().stream({ name: 'fork' });
    recorded.redirect(url('/t/dial'));
    t.server.verbs('/t/recorded', recorded.toString());

    const dial = new VoiceResponse();
    dial.dial({ action: url('/t/conference'), timeout: 10, timeLimit: 2 }).number('+254722600001');
    t.server.verbs('/t/dial', dial.toString());

    const conference = new VoiceResponse();
    conference.dial({ action: url('/t/queue'), timeLimit: 2 }).conference({ beep: 'false' }, 'library-room');
    t.server.verbs('/t/conference', conference.toString());

    const queue = new VoiceResponse();
    queue.dial({ action: url('/t/enqueue'), timeout: 1 }).queue('nobody-waits');
    t.server.verbs('/t/queue', queue.toString());

    const enqueue = new VoiceResponse();
    enqueue.enqueue({ waitUrl: url('/t/wait'), action: url('/t/left') }, 'support');
    t.server.verbs('/t/enqueue', enqueue.toString());

    const wait = new VoiceResponse();
    wait.say('You are waiting.');
    wait.hangup();
    t.server.verbs('/t/wait', wait.toString());

    const left = new VoiceResponse();
    left.say('Goodbye.');
    left.hangup();
    t.server.verbs('/t/left', left.toString());

    const dialled = carrier({ port: t.carrierPort, sink: CALLEE_SINK });
    await waitForBound(t.carrierPort);
    const r = await callThrough('/t/start');
    assertNormal(r);
    const asked = t.server.requests.map((q) => q.url);
    for (const p of ['/t/gathered', '/t/recorded', '/t/dial', '/t/conference', '/t/queue', '/t/enqueue', '/t/wait'])
      assert.ok(asked.includes(p), `${p} was requested: ${asked.join(' ')}`);
    assert.ok(asked.includes('/t/left'), `the Enqueue's action ran: ${asked.join(' ')}`);
    for (const code of ['TTS.0200', 'STREAM.0100', 'STREAM.0300', 'QUEUE.0100', 'QUEUE.0300'])
      assert.ok(r.codes.includes(code), `${code} in ${r.codes.join(' ')}`);
    assert.ok(!r.codes.includes('PLAY.0404'), 'the Play URL played');
    assert.ok(streamMessages.includes('start') && streamMessages.includes('stop'), streamMessages.join(' '));
    assert.equal(await dialled.exited, 0, dialled.output());
  });

  it('Reject from the twilio library refuses the ringing call: 486, never answered, no SYS.0500', async () => {
    const reject = new VoiceResponse();
    reject.reject({ reason: 'busy' });
    t.server.verbs('/t/reject', reject.toString());
    await t.setInboundUrl(t.server.url('/t/reject'));
    t.sipp = t.carrierCallsExpecting(486);
    assert.equal(await t.sipp.exited, 0, t.sipp.output());
    const call = await t.lastCall();
    assert.equal(call.reason_code, 'END.0486');
    const codes = await t.eventCodes(call.uuid);
    assert.ok(!codes.includes('SYS.0500') && !codes.includes('WH.0400'), codes.join(' '));
  });
});
