import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import {
  MediaError,
  MediaService,
  readWav,
  rtpmaps,
  type DtmfEvent,
  type RtpengineSupervisor,
} from '../../media/index.js';
import { encodeG711 } from '../../media/g711.js';
import { startMediaService, waitFor } from './helpers.js';
import { bestCorrelation, envelope, RtpPeer, tone, toneEnergy } from './rtp-peer.js';

describe('media: MediaService with a real rtpengine and real RTP peers', function () {
  this.timeout(60_000);
  let supervisor: RtpengineSupervisor;
  let media: MediaService;
  let svc: Awaited<ReturnType<typeof startMediaService>>;
  const peers: RtpPeer[] = [];
  let n = 0;
  const callId = (): string => `call-${process.pid}-${(n += 1)}`;
  const peer = async (): Promise<RtpPeer> => {
    const p = await RtpPeer.open();
    peers.push(p);
    return p;
  };

  before(async () => {
    svc = await startMediaService('svc');
    media = svc.media;
    supervisor = svc.supervisor;
  });

  after(async () => {
    for (const p of peers) p.close();
    await svc?.stop();
  });

  it('a bridge carries audio both ways (A sends 440 Hz as PCMU, B sends 1000 Hz as PCMA)', async () => {
    const id = callId();
    const a = await peer();
    const b = await peer();
    b.useSdp(await media.offer(id, 'A', a.sdp(['PCMU', 'PCMA', 'telephone-event'])));
    a.useSdp(await media.answer(id, 'A', 'B', b.sdp(['PCMA', 'telephone-event'])));
    await Promise.all([a.sendAudio(tone(440, 1), 0), b.sendAudio(tone(1000, 1), 8)]);
    await new Promise((r) => setTimeout(r, 200));
    const atB = b.decoded();
    const atA = a.decoded();
    assert.ok(b.received.length >= 45, `B got ${b.received.length} packets`);
    assert.ok(a.received.length >= 45, `A got ${a.received.length} packets`);
    assert.ok(toneEnergy(atB, 440) > 10 * toneEnergy(atB, 1000), 'B hears 440 Hz');
    assert.ok(toneEnergy(atA, 1000) > 10 * toneEnergy(atA, 440), 'A hears 1000 Hz');
    await media.deleteSession(id);
  });

  it('transcodes when the legs share no codec (A speaks only PCMA, B only PCMU)', async () => {
    const id = callId();
    const a = await peer();
    const b = await peer();
    const toB = await media.offer(id, 'A', a.sdp(['PCMA']), { toSide: { codecs: ['PCMU'], only: true } });
    assert.deepEqual([...rtpmaps(toB).values()].includes('PCMU'), true);
    b.useSdp(toB);
    a.useSdp(await media.answer(id, 'A', 'B', b.sdp(['PCMU'])));
    await a.sendAudio(tone(440, 0.6), 8);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(b.received.length >= 20, `B got ${b.received.length}`);
    assert.ok(
      b.received.every((p) => p.payloadType === 0),
      'B receives PCMU',
    );
    assert.ok(toneEnergy(b.decoded(), 440) > 500, 'the 440 Hz tone survived transcoding');
    await media.deleteSession(id);
  });

  it('offers PCMU, PCMA, G722, Opus and telephone-event through to the other side', async () => {
    const id = callId();
    const a = await peer();
    const toB = await media.offer(id, 'A', a.sdp(['PCMU', 'PCMA', 'G722', 'opus', 'telephone-event']));
    const names = [...rtpmaps(toB).values()];
    for (const c of ['PCMU', 'PCMA', 'G722', 'OPUS', 'TELEPHONE-EVENT']) assert.ok(names.includes(c), `${c} in ${toB}`);
    await media.deleteSession(id);
  });

  it('a peer played a Say really receives that speech (envelope matches the synthesized file)', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    a.sendFrame(new Int16Array(160)); // let rtpengine learn A's address, as a real phone would
    const text = 'Welcome to Simu. Please leave a message after the tone.';
    const result = await media.say(id, 'A', text, { language: 'en-US', voice: 'woman' });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(result.completed, true);
    assert.ok(result.ttsSeconds > 1.5 && result.ttsSeconds < 8, `ttsSeconds ${result.ttsSeconds}`);
    const synth = await media.tts.synthesize({ text, language: 'en-US', voice: 'woman' });
    assert.equal(synth.cached, true);
    const sent = (await readWav(synth.path)).samples;
    const heard = a.decoded();
    const heardSeconds = heard.length / 8000;
    assert.ok(Math.abs(heardSeconds - result.ttsSeconds) < 0.4, `heard ${heardSeconds}s of ${result.ttsSeconds}s`);
    const env = envelope(heard);
    const loudFrames = env.filter((v) => v > 500).length;
    assert.ok(loudFrames > env.length * 0.3, `speech-level frames ${loudFrames}/${env.length}`);
    const { r } = bestCorrelation(envelope(sent), env, 25);
    assert.ok(r > 0.8, `envelope correlation ${r}`);
    await media.deleteSession(id);
  });

  it('the Record beep reaches the caller as a 1 kHz tone of 500 ms', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU'])));
    a.sendFrame(new Int16Array(160));
    const r = await media.playBeep(id, 'A');
    await new Promise((res) => setTimeout(res, 150));
    assert.equal(r.completed, true);
    assert.ok(Math.abs(r.durationMs - 500) < 30, `duration ${r.durationMs}`);
    const heard = a.decoded();
    assert.ok(toneEnergy(heard, 1000) > 10 * toneEnergy(heard, 440), 'a 1 kHz tone');
    await media.deleteSession(id);
  });

  it('a playback can be cancelled and resolves as not completed', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU'])));
    const ctl = new AbortController();
    const started = Date.now();
    const playing = media.say(id, 'A', 'This is a long sentence that will be cut short by the caller pressing a key.', {
      signal: ctl.signal,
    });
    setTimeout(() => ctl.abort(), 400);
    const r = await playing;
    assert.equal(r.completed, false);
    assert.ok(Date.now() - started < 2000);
    await media.deleteSession(id);
  });

  it('an IVR caller can then be bridged to a new leg (Dial after Say) without re-INVITE, audio both ways', async () => {
    const id = callId();
    const a = await peer();
    const b = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    a.sendFrame(new Int16Array(160));
    await media.playFile(id, 'A', (await media.tts.synthesize({ text: 'Connecting.' })).path);
    b.useSdp(await media.offerFromIvr(id, 'A', 'B'));
    await media.answer(id, 'A', 'B', b.sdp(['PCMU'])); // A keeps sending where it always did
    a.received.length = 0;
    await Promise.all([a.sendAudio(tone(440, 1), 0), b.sendAudio(tone(1000, 1), 0)]);
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(b.received.length >= 45 && toneEnergy(b.decoded(), 440) > 500, `B hears A (${b.received.length})`);
    assert.ok(a.received.length >= 45 && toneEnergy(a.decoded(), 1000) > 500, `A hears B (${a.received.length})`);
    await media.deleteSession(id);
  });

  for (const how of ['answered (inbound)', 'placed (originate)'] as const) {
    it(`a bridged ${how} IVR leg goes back to the IVR when the dialled leg ends: it hears prompts, Record hears it`, async () => {
      const id = callId();
      const a = await peer();
      const b = await peer();
      if (how === 'answered (inbound)') {
        a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
      } else {
        a.useSdp(await media.offerIvr(id, 'A'));
        await media.completeIvr(id, 'A', a.sdp(['PCMU']));
      }
      a.sendFrame(new Int16Array(160));
      b.useSdp(await media.offerFromIvr(id, 'A', 'B'));
      await media.answer(id, 'A', 'B', b.sdp(['PCMU']));
      await a.sendAudio(tone(440, 0.6), 0);
      await new Promise((r) => setTimeout(r, 150));
      assert.ok(toneEnergy(b.decoded(), 440) > 500, `B hears A while bridged (${b.received.length})`);
      // The dialled party hangs up (its socket stays open here, to show nothing more is sent to it).
      await media.returnToIvr(id, 'A');
      const beforeIvr = media.ivrPacketsReceived(id, 'A');
      const heardByB = b.received.length;
      await a.sendAudio(tone(440, 0.5), 0);
      await new Promise((r) => setTimeout(r, 150));
      assert.ok(media.ivrPacketsReceived(id, 'A') - beforeIvr >= 20, 'our IVR endpoint receives A again');
      assert.equal(b.received.length, heardByB, 'A is no longer sent to the ended leg');
      a.received.length = 0;
      const played = await media.playFile(id, 'A', (await media.tts.synthesize({ text: 'Welcome back.' })).path);
      assert.equal(played.completed, true);
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(a.received.length >= 0.8 * (played.durationMs / 20), `A hears the prompt (${a.received.length})`);
      await media.deleteSession(id);
    });
  }

  it('a leg the platform called out: frames sent from its audio port reach the callee (our endpoint offered)', async () => {
    const id = callId();
    const callee = await peer();
    callee.useSdp(await media.offerIvr(id, 'A', { calleeSide: { profile: 'rtp' } }));
    await media.completeIvr(id, 'A', callee.sdp(['PCMU']));
    const port = media.audioPort(id, 'A');
    const samples = tone(700, 0.6);
    for (let i = 0; i + 160 <= samples.length; i += 160) {
      port.send(encodeG711(samples.subarray(i, i + 160), 0));
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 150));
    assert.ok(callee.received.length >= 20, `the callee got ${callee.received.length} packets`);
    assert.ok(toneEnergy(callee.decoded(), 700) > 500, 'the callee hears what the port sent');
    await media.deleteSession(id);
  });

  it('two IVR legs joined to each other (a leg between nodes): frames sent from either port reach the other', async () => {
    const out = callId();
    const back = callId();
    const offer = await media.offerIvr(out, 'A', { calleeSide: { profile: 'rtp' } });
    await media.completeIvr(out, 'A', await media.answerIvr(back, 'A', offer));
    const ports = [media.audioPort(out, 'A'), media.audioPort(back, 'A')] as const;
    const got = [0, 0];
    const stops = ports.map((p, i) => p.onReceived(() => (got[i]! += 1)));
    for (let i = 0; i < 30; i++) {
      ports[0].send(Buffer.alloc(160, 0x55));
      ports[1].send(Buffer.alloc(160, 0x55));
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 150));
    for (const stop of stops) stop();
    assert.ok(got[1]! >= 20, `the answering side got ${got[1]} frames of the offering side`);
    assert.ok(got[0]! >= 20, `the offering side got ${got[0]} frames of the answering side`);
    await media.deleteSession(out);
    await media.deleteSession(back);
  });

  it('a recording captures what the caller said and stops on silence', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    const speech = await media.tts.synthesize({ text: 'My account number is four two seven.', language: 'en-GB' });
    const said = (await readWav(speech.path)).samples;
    const recording = media.record(id, 'A', { maxLengthSec: 20, silenceTimeoutSec: 1 });
    await a.sendAudio(said, 0);
    // Keep sending silence, as phones do, until the recorder gives up on silence.
    const silence = setInterval(() => a.sendFrame(new Int16Array(160)), 20);
    const r = await recording.finally(() => clearInterval(silence));
    assert.equal(r.reason, 'silence');
    assert.equal(statSync(r.path).size, r.sizeBytes);
    const rec = (await readWav(r.path)).samples;
    assert.ok(Math.abs(r.durationSec - speech.seconds) < 0.6, `recorded ${r.durationSec}s of ${speech.seconds}s`);
    const { r: corr } = bestCorrelation(envelope(said), envelope(rec), 25);
    assert.ok(corr > 0.8, `envelope correlation ${corr}`);
    await media.deleteSession(id);
  });

  it('a recording stops at max length', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU'])));
    const recording = media.record(id, 'A', { maxLengthSec: 1, silenceTimeoutSec: 5 });
    await a.sendAudio(tone(300, 1.5), 0);
    const r = await recording;
    assert.equal(r.reason, 'max-length');
    assert.ok(Math.abs(r.durationSec - 1) < 0.05, `duration ${r.durationSec}`);
    await media.deleteSession(id);
  });

  it('RecordSession writes both directions of a bridge as a two-channel WAV', async () => {
    const id = callId();
    const a = await peer();
    const b = await peer();
    b.useSdp(await media.offer(id, 'A', a.sdp(['PCMU'])));
    a.useSdp(await media.answer(id, 'A', 'B', b.sdp(['PCMU'])));
    await media.startSessionRecording(id, ['A', 'B']);
    await Promise.all([a.sendAudio(tone(440, 1), 0), b.sendAudio(tone(1000, 1), 0)]);
    const { sessionRecording: r } = await media.deleteSession(id);
    assert.ok(r, 'a session recording was written');
    const wav = await readWav(r.path);
    assert.equal(wav.channels, 2);
    assert.ok(Math.abs(r.durationSec - 1) < 0.2, `duration ${r.durationSec}`);
    const left = wav.samples.filter((_, i) => i % 2 === 0);
    const right = wav.samples.filter((_, i) => i % 2 === 1);
    assert.ok(toneEnergy(left, 440) > 10 * toneEnergy(left, 1000), 'left is A (440 Hz)');
    assert.ok(toneEnergy(right, 1000) > 10 * toneEnergy(right, 440), 'right is B (1000 Hz)');
  });

  it('RecordSession on an IVR caller: the caller left, our prompt and then a bridged leg right', async () => {
    const id = callId();
    const a = await peer();
    const b = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    a.sendFrame(new Int16Array(160));
    await media.startCallRecording(id, 'A', { maxLengthSec: 30 });
    assert.equal(media.isRecording(id), true);
    const caller = a.sendAudio(tone(440, 3), 0); // the caller talks through the prompt and the bridge
    const prompt = await media.tts.synthesize({ text: 'This call is recorded.' });
    await media.playFile(id, 'A', prompt.path);
    b.useSdp(await media.offerFromIvr(id, 'A', 'B'));
    await media.answer(id, 'A', 'B', b.sdp(['PCMU']));
    await b.sendAudio(tone(1000, 0.6), 0);
    await caller;
    const { sessionRecording: r } = await media.deleteSession(id);
    assert.ok(r, 'a session recording was written');
    const wav = await readWav(r.path);
    assert.equal(wav.channels, 2);
    const left = wav.samples.filter((_, i) => i % 2 === 0);
    const right = wav.samples.filter((_, i) => i % 2 === 1);
    assert.ok(toneEnergy(left, 440) > 10 * toneEnergy(left, 1000), 'left is the caller (440 Hz)');
    assert.ok(toneEnergy(right, 1000) > 10 * toneEnergy(right, 440), 'right holds the bridged leg (1000 Hz)');
    const spoken = (await readWav(prompt.path)).samples;
    const { r: corr } = bestCorrelation(envelope(spoken), envelope(right.slice(0, spoken.length + 8000)), 50);
    assert.ok(corr > 0.8, `right holds the prompt the caller heard (envelope correlation ${corr.toFixed(2)})`);
  });

  it('RecordSession mono with maxLength: one channel, cut at maxLength', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU'])));
    await media.startCallRecording(id, 'A', { maxLengthSec: 1, mono: true });
    await a.sendAudio(tone(440, 2), 0);
    const { sessionRecording: r } = await media.deleteSession(id);
    assert.ok(r);
    const wav = await readWav(r.path);
    assert.equal(wav.channels, 1);
    assert.ok(Math.abs(r.durationSec - 1) < 0.05, `duration ${r.durationSec}`);
    assert.ok(toneEnergy(wav.samples, 440) > 500);
  });

  it('RFC 4733 digits from a leg surface as dtmf events with call id, leg and digit', async () => {
    const id = callId();
    const a = await peer();
    a.useSdp(await media.answerIvr(id, 'A', a.sdp(['PCMU', 'telephone-event'])));
    const events: DtmfEvent[] = [];
    media.on('dtmf', (e) => events.push(e));
    a.sendFrame(new Int16Array(160));
    await a.sendDigit(5, 100);
    await a.sendDigit(11, 100);
    // Each key twice: read by our IVR endpoint at its first packet (`rtp-event`), and logged by rtpengine when it
    // ends (no source: the log's, with its duration). The call counts them once (calls/call-digits.ts).
    await waitFor(() => events.filter((e) => e.callId === id).length >= 4, 3000, 'four dtmf events');
    const mine = events.filter((e) => e.callId === id);
    const keys = (source: DtmfEvent['source']) =>
      mine.filter((e) => e.source === source).map((e) => [e.legTag, e.digit]);
    assert.deepEqual(keys(undefined), [
      ['A', '5'],
      ['A', '#'],
    ]);
    assert.deepEqual(keys('rtp-event'), [
      ['A', '5'],
      ['A', '#'],
    ]);
    assert.ok((mine.find((e) => e.source === undefined)?.durationMs ?? 0) >= 60);
    await media.deleteSession(id);
  });

  it('1,000 offer/answer/delete cycles leave no call in the engine', async function () {
    this.timeout(120_000);
    const a = await peer();
    const b = await peer();
    for (let i = 0; i < 1000; i += 1) {
      const id = `cycle-${i}`;
      await media.offer(id, 'A', a.sdp());
      await media.answer(id, 'A', 'B', b.sdp());
      await media.deleteSession(id);
    }
    assert.deepEqual(await supervisor.client.list(), []);
    assert.equal(media.health().sessions, 0);
  });

  it('operations on an unknown call are MEDIA_NO_SESSION', async () => {
    await assert.rejects(
      media.playFile('nope', 'A', '/tmp/x.wav'),
      (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_NO_SESSION',
    );
  });
});
