import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { verifyWebhookSignature } from '../../../events/index.js';
import { decodeG711, encodeG711 } from '../../../media/g711.js';
import { nextPort, nextPorts } from '../../support/ports.js';
import { sine, toneAmplitude, toneSeconds } from '../../support/tones.js';
import { eventually } from '../../support/wait.js';
import {
  AccountServer,
  addCarrier,
  allocateSwitchPorts,
  carrierCallsDid,
  createAccountWithDid,
  speakingCarrierScenario,
  startTestSwitch,
  ulawOf,
  type SippRun,
} from '../support/harness.js';
import { RtpCapture, toneUlawFile } from '../support/rtp-capture.js';

const PORTS = allocateSwitchPorts();
const SINK = nextPort(); // the SDP of the scenario does not use it; kept for carrierCallsDid
/** SIPp's own media port (it plays the file from it, and what it hears arrives there: captured). */
const SIPP_MEDIA = nextPorts(4);
const CALLER = nextPort();
const CARRIER = nextPort();

/** Highest normalised cross-correlation of `needle` anywhere in `hay` (1: the same waveform). */
function bestCorrelation(hay: Int16Array, needle: Int16Array): number {
  let nn = 0;
  for (const v of needle) nn += v * v;
  let best = 0;
  for (let lag = 0; lag + needle.length <= hay.length; lag++) {
    let dot = 0;
    let hh = 0;
    for (let i = 0; i < needle.length; i++) {
      const h = hay[lag + i]!;
      dot += h * needle[i]!;
      hh += h * h;
    }
    if (hh > 0) best = Math.max(best, dot / Math.sqrt(nn * hh));
  }
  return best;
}

/**
 * Issue 18 item 3, done when: a local WebSocket server receives the caller's audio from a SIPp leg playing a known
 * file (correlated with the source), sends back audio that the SIPp leg hears, and `clear` stops it within 100 ms.
 */
describe('e2e: <Connect><Stream> with a SIPp caller and a local WebSocket server', function () {
  this.timeout(90000);
  let ctx: Awaited<ReturnType<typeof startTestSwitch>>;
  const server = new AccountServer();
  let sink: RtpCapture;
  let sipp: SippRun | undefined;
  let wss: WebSocketServer;
  let wsPort = 0;
  const DID = '+254711800001';
  const FORK_DID = '+254711800002';
  const KEYS_DID = '+254711800003';
  const CLOCK_DID = '+254711800004';
  let secret = '';
  const upgrades: IncomingMessage[] = [];
  let onSocket: (ws: WebSocket) => void = () => undefined;

  before(async () => {
    ctx = await startTestSwitch(PORTS);
    await server.listen();
    const account = await createAccountWithDid(ctx.db, DID);
    secret = (await ctx.db('accounts').where({ id: account.id }).first()).signing_secret;
    await addCarrier(ctx.db, CARRIER, 'carrier', ctx.sw);
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    wsPort = (wss.address() as { port: number }).port;
    wss.on('connection', (ws, req) => {
      upgrades.push(req);
      onSocket(ws);
    });
    server.verbs(
      '/answer',
      `<Response><Connect><Stream url="ws://127.0.0.1:${wsPort}/agent?x=1">` +
        `<Parameter name="ticket" value="42"/></Stream></Connect><Say>bye</Say></Response>`,
    );
    await ctx
      .db('numbers')
      .where({ number: DID })
      .update({ webhook_voice_inbound: server.url('/answer') });
    await ctx.db('numbers').insert({
      id: 'n-fork',
      number: FORK_DID,
      account_id: account.id,
      is_active: true,
      acquired_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
    });
    await ctx
      .db('numbers')
      .where({ number: FORK_DID })
      .update({ webhook_voice_inbound: server.url('/fork') });
    await ctx.db('numbers').insert({
      id: 'n-keys',
      number: KEYS_DID,
      account_id: account.id,
      is_active: true,
      acquired_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
      webhook_voice_inbound: server.url('/keys'),
    });
    server.verbs('/keys', `<Response><Connect><Stream url="ws://127.0.0.1:${wsPort}/keys"/></Connect></Response>`);
    await ctx.db('numbers').insert({
      id: 'n-clock',
      number: CLOCK_DID,
      account_id: account.id,
      is_active: true,
      acquired_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
      webhook_voice_inbound: server.url('/clock'),
    });
    server.verbs('/clock', `<Response><Connect><Stream url="ws://127.0.0.1:${wsPort}/clock"/></Connect></Response>`);
    server.verbs(
      '/fork',
      `<Response><Start><Stream name="tap" url="ws://127.0.0.1:${wsPort}/tap"/></Start>` +
        `<Say>one two three four five six seven eight nine ten</Say><Stop><Stream name="tap"/></Stop>` +
        `<Pause length="1"/></Response>`,
    );
  });

  beforeEach(async () => {
    sink = await new RtpCapture(SIPP_MEDIA).start();
  });

  afterEach(() => {
    sipp?.kill();
    sink.stop();
  });

  after(async () => {
    wss?.close();
    await server.close();
    await ctx?.sw.stop();
  });

  it('streams the caller to the server, plays the server back, and clear stops it within 100 ms', async () => {
    // The known file: speech, 1 s of silence before it so the stream is open when it starts.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'simu-stream-'));
    const raw = path.join(dir, 'raw.wav');
    const wav = path.join(dir, 'said.wav');
    execFileSync('espeak-ng', ['-w', raw, 'one two three four five six seven']);
    execFileSync('sox', [raw, '-r', '8000', '-c', '1', '-b', '16', wav, 'pad', '1', '1']);
    const ulaw = ulawOf(wav);
    const source = decodeG711(readFileSync(ulaw), 0);

    const messages: any[] = [];
    const inbound: Buffer[] = [];
    let socket: WebSocket | undefined;
    onSocket = (ws) => {
      socket = ws;
      ws.on('message', (data) => {
        const m = JSON.parse(data.toString());
        messages.push(m);
        if (m.event === 'media') inbound.push(Buffer.from(m.media.payload, 'base64'));
      });
    };
    sipp = carrierCallsDid({
      sip: PORTS.sip,
      did: DID,
      port: CALLER,
      sink: SINK,
      scenario: speakingCarrierScenario(ulaw),
      extra: ['-mp', String(SIPP_MEDIA)],
    });
    await eventually(() => socket, 'the stream to connect', 15000);

    // The upgrade request is signed like every webhook: URL + timestamp + empty body.
    const req = upgrades.at(-1)!;
    const url = `ws://127.0.0.1:${wsPort}/agent?x=1`;
    assert.ok(
      verifyWebhookSignature(
        secret,
        url,
        String(req.headers['x-voice-timestamp']),
        '',
        String(req.headers['x-voice-signature']),
      ),
      'X-Voice-Signature verifies',
    );
    await eventually(() => messages.find((m) => m.event === 'start'), 'the start message');
    assert.equal(messages[0].event, 'connected');
    const start = messages.find((m) => m.event === 'start');
    assert.deepEqual(start.start.mediaFormat, { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 });
    assert.deepEqual(start.start.customParameters, { ticket: '42' });
    assert.deepEqual(start.start.tracks, ['inbound']);
    assert.match(start.streamSid, /^MZ/);

    // The caller's file arrives: wait for its length, then correlate the middle half second with the source.
    await eventually(() => inbound.length * 160 >= source.length - 800, 'the caller audio', 20000);
    const heard = decodeG711(Buffer.concat(inbound), 0);
    const mid = Math.floor(source.length / 2);
    const corr = bestCorrelation(heard, source.subarray(mid, mid + 4000));
    assert.ok(corr > 0.9, `the streamed audio is the caller's file (correlation ${corr.toFixed(3)})`);
    const media = messages.find((m) => m.event === 'media');
    assert.equal(media.media.track, 'inbound');
    assert.equal(media.media.chunk, '1');
    assert.equal(typeof media.media.timestamp, 'string');

    // Back to the caller: 4 s of 440 Hz in 1 s messages and a mark after them; clear after 1.5 s.
    const tone = encodeG711(sine(440, 4, 8000), 0);
    const sentAt = Date.now();
    for (let i = 0; i < 4; i++) {
      const payload = tone.subarray(i * 8000, (i + 1) * 8000).toString('base64');
      socket!.send(JSON.stringify({ event: 'media', streamSid: start.streamSid, media: { payload } }));
    }
    socket!.send(JSON.stringify({ event: 'mark', streamSid: start.streamSid, mark: { name: 'end-of-tone' } }));
    const has440 = (p: { samples: Int16Array }) => toneAmplitude(p.samples, 440) > 2000;
    await eventually(() => sink.packets().filter((p) => p.at > sentAt && has440(p)).length > 25, 'the tone heard');
    await new Promise((r) => setTimeout(r, 1500 - (Date.now() - sentAt)));
    const clearAt = Date.now();
    socket!.send(JSON.stringify({ event: 'clear', streamSid: start.streamSid }));
    await eventually(() => messages.find((m) => m.event === 'mark'), 'the mark returned by clear', 3000);
    await new Promise((r) => setTimeout(r, 700));
    const lastTone = sink
      .packets()
      .filter((p) => has440(p))
      .at(-1)!;
    const heardSeconds = sink.packets().filter((p) => p.at > sentAt && has440(p)).length * 0.02;
    assert.ok(heardSeconds > 1 && heardSeconds < 2.2, `the caller heard about 1.5 s of the tone: ${heardSeconds}`);
    if (process.env.SIMU_TEST_FIGURES) console.log({ corr, clearMs: lastTone.at - clearAt, heardSeconds });
    assert.ok(lastTone.at - clearAt < 100, `clear stopped the audio ${lastTone.at - clearAt} ms after it was sent`);
    assert.equal(messages.find((m) => m.event === 'mark').mark.name, 'end-of-tone');

    // The server closes: the next verb runs, then the document ends and the switch hangs up.
    socket!.close();
    assert.equal(await sipp.exited, 0, sipp.output());
    const codes = (await ctx.db('call_events').select('code')).map((r: { code: string }) => r.code);
    assert.ok(codes.includes('STREAM.0100') && codes.includes('STREAM.0300'), codes.join(' '));
  });

  it('<Start><Stream> forks the caller without holding up the verbs; <Stop><Stream> ends it', async () => {
    const ulaw = toneUlawFile(500, 20);
    const messages: any[] = [];
    let closedAt = 0;
    onSocket = (ws) => {
      ws.on('message', (data) => messages.push({ ...JSON.parse(data.toString()), at: Date.now() }));
      ws.on('close', () => (closedAt = Date.now()));
    };
    const before = await ctx.db('call_events').count({ n: '*' }).first();
    sipp = carrierCallsDid({
      sip: PORTS.sip,
      did: FORK_DID,
      port: CALLER,
      sink: SINK,
      scenario: speakingCarrierScenario(ulaw),
      extra: ['-mp', String(SIPP_MEDIA)],
    });
    assert.equal(await sipp.exited, 0, sipp.output());
    const media = messages.filter((m) => m.event === 'media');
    assert.ok(media.length > 50, `caller audio streamed while the Say played (${media.length} frames)`);
    const heard = decodeG711(Buffer.concat(media.map((m) => Buffer.from(m.media.payload, 'base64'))), 0);
    // Judged 50 ms at a time: frames lost or late on a busy box cannot cancel the tone out.
    const seconds = toneSeconds(heard, 500, 2000);
    assert.ok(seconds >= 0.5, `the caller's 500 Hz arrived (${seconds} s of ${(heard.length / 8000).toFixed(1)} s)`);
    assert.equal(messages.at(-1).event, 'stop', 'the stream ended with stop');
    assert.ok(closedAt > 0);
    // The verbs went on: the Say was synthesised, and the Stop came before the Pause and the end of the call.
    const events = await ctx
      .db('call_events')
      .select('code')
      .offset(Number((before as any).n));
    const codes = events.map((r: { code: string }) => r.code);
    assert.ok(codes.includes('TTS.0200') && codes.includes('STREAM.0300'), codes.join(' '));
    assert.ok(codes.indexOf('STREAM.0300') < codes.lastIndexOf('CALL.0300'), codes.join(' '));
  });

  it('both clocks keep running: silence frames while the caller sends nothing, silence RTP after clear', async () => {
    // The caller speaks for one second, then sends no RTP at all.
    const ulaw = toneUlawFile(500, 1);
    const media: { at: number; chunk: number; timestamp: number; payload: Buffer }[] = [];
    let socket: WebSocket | undefined;
    let streamSid = '';
    onSocket = (ws) => {
      socket = ws;
      ws.on('message', (data) => {
        const m = JSON.parse(data.toString());
        if (m.event === 'start') streamSid = m.streamSid;
        if (m.event !== 'media') return;
        const { chunk, timestamp, payload } = m.media;
        media.push({ at: Date.now(), chunk: +chunk, timestamp: +timestamp, payload: Buffer.from(payload, 'base64') });
      });
    };
    sipp = carrierCallsDid({
      sip: PORTS.sip,
      did: CLOCK_DID,
      port: CALLER,
      sink: SINK,
      scenario: speakingCarrierScenario(ulaw),
      extra: ['-mp', String(SIPP_MEDIA)],
    });
    const silent = (p: Buffer): boolean => p.every((b) => b === 0xff);
    await eventually(() => media.filter((m) => !silent(m.payload)).length >= 40, 'the caller audio', 20000);
    await eventually(() => Date.now() - media.findLast((m) => !silent(m.payload))!.at > 2000, 'the caller to stop');

    // The last 1.5 s of the caller's silence, as the server received it: 50 frames a second, all silence.
    const spokeUntil = media.findLast((m) => !silent(m.payload))!.at;
    const quiet = media.filter((m) => m.at > spokeUntil + 300 && m.at <= spokeUntil + 1800);
    assert.ok(quiet.every((m) => silent(m.payload)));
    assert.ok(quiet.length >= 63 && quiet.length <= 87, `${quiet.length} media messages in 1.5 s of silence`);
    assert.deepEqual(
      media.map((m) => m.chunk),
      media.map((_m, i) => i + 1),
      'chunks count on without a gap',
    );
    const span = quiet.at(-1)!.timestamp - quiet[0]!.timestamp;
    assert.ok(Math.abs(span - (quiet.length - 1) * 20) <= 60, `timestamps advance 20 ms a frame (${span} ms)`);

    // Back to the caller: 2 s of tone, cleared after half a second; RTP goes on, silent, at 50 packets a second.
    const tone = encodeG711(sine(440, 2, 8000), 0);
    const sentAt = Date.now();
    socket!.send(JSON.stringify({ event: 'media', streamSid, media: { payload: tone.toString('base64') } }));
    await new Promise((r) => setTimeout(r, 500));
    const clearAt = Date.now();
    socket!.send(JSON.stringify({ event: 'clear', streamSid }));
    // tcpdump hands packets over in blocks: wait until the capture has passed the window.
    await eventually(() => sink.packets().some((p) => p.at > clearAt + 1800), 'RTP to the caller after clear', 5000);
    const has440 = (p: { samples: Int16Array }) => toneAmplitude(p.samples, 440) > 2000;
    const heard = sink.packets().filter((p) => p.at > sentAt);
    assert.ok(heard.filter(has440).length > 15, 'the tone was heard before the clear');
    const after = heard.filter((p) => p.at > clearAt + 300 && p.at <= clearAt + 1800);
    assert.ok(
      after.every((p) => !has440(p) && p.samples.every((v) => Math.abs(v) < 8)),
      'silence after clear',
    );
    assert.ok(after.length >= 63 && after.length <= 87, `${after.length} RTP packets in 1.5 s after clear`);
    if (process.env.SIMU_TEST_FIGURES) console.log({ quiet: quiet.length, afterClear: after.length });

    socket!.close();
    assert.equal(await sipp.exited, 0, sipp.output());
  });

  it("the caller's keys reach the server as dtmf messages", async () => {
    const messages: any[] = [];
    let socket: WebSocket | undefined;
    onSocket = (ws) => {
      socket = ws;
      ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
    };
    sipp = carrierCallsDid({
      sip: PORTS.sip,
      did: KEYS_DID,
      port: CALLER,
      sink: SINK,
      scenario: 'uac-inbound-keys.xml',
    });
    await eventually(() => messages.filter((m) => m.event === 'dtmf').length >= 3, 'three dtmf messages', 20000);
    const dtmf = messages.filter((m) => m.event === 'dtmf');
    assert.deepEqual(
      dtmf.map((m) => m.dtmf),
      ['1', '2', '#'].map((digit) => ({ track: 'inbound_track', digit })),
    );
    assert.match(dtmf[0].streamSid, /^MZ/);
    socket!.close();
    assert.equal(await sipp.exited, 0, sipp.output());
  });
});
