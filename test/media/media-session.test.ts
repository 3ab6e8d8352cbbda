import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ManualClock } from '../../kit/index.js';
import { Limiter } from '../../media/limiter.js';
import {
  MediaError,
  MediaService,
  MediaSession,
  readWav,
  writeWav,
  type MediaSessionCloseReason,
} from '../../media/index.js';
import { createSocket } from 'node:dgram';
import { eventually } from '../support/wait.js';
import { fakeEngine } from './fake-engine.js';
import { quietLogger, tempDir } from './helpers.js';

/**
 * Unit tests of a call's MediaSession and its close() cascade, over a fake of the rtpengine ng client and a
 * hand-driven clock (real IVR endpoint sockets on loopback). Media itself is proved with the real rtpengine in
 * media-service.test.ts.
 */
const EPOCH = Date.parse('2026-01-01T00:00:00.000Z');
const callerSdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n';

const isClosedError = (e: unknown): boolean => e instanceof MediaError && e.code === 'MEDIA_NO_SESSION';

describe('media: MediaSession (fake ng client, manual clock)', function () {
  this.timeout(10_000);
  let data: ReturnType<typeof tempDir>;
  let clock: ManualClock;
  let seq = 0;

  beforeEach(() => {
    data = tempDir('session');
    clock = new ManualClock(EPOCH);
  });
  afterEach(() => data.remove());

  const newSession = (engine = fakeEngine(), opts: { recordingDir?: string } = {}) =>
    new MediaSession({
      callId: 'call-1',
      engine,
      clock,
      log: quietLogger,
      localMediaAddress: '127.0.0.1',
      engineRecordingDir: opts.recordingDir ?? data.dir,
      recordingPath: (kind) => join(data.dir, `call-1-${kind}-${(seq += 1)}.wav`),
      playStarts: new Limiter(4),
    });

  /** A 2 s, 8 kHz mono prompt of a steady level, as our TTS writes them. */
  const prompt = async (): Promise<string> => {
    const path = join(data.dir, 'prompt.wav');
    await writeWav(path, { sampleRate: 8000, channels: 1, samples: new Int16Array(16000).fill(4000) });
    return path;
  };

  it('a playback ends when the injected clock reaches its duration, not before', async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    await session.answerIvr('A', callerSdp);
    let result: { completed: boolean } | undefined;
    const playing = session.play('A', '/x.wav').then((r) => (result = r));
    await new Promise((r) => setImmediate(r));
    clock.advance(1999);
    await new Promise((r) => setImmediate(r));
    assert.equal(result, undefined, 'still playing 1 ms before its end');
    clock.advance(1);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(result, { durationMs: 2000, completed: true }, "ended at the clock's 2000 ms, not the wall's");
    await playing;
    assert.equal(engine.client.commands().includes('stopMedia'), false, 'a finished prompt needs no stop');
    await session.close();
  });

  it('close() cascades: playback cut short, IVR endpoint closed (its Record ends), recorder stopped and written, call deleted', async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    const closes: MediaSessionCloseReason[] = [];
    session.on('close', (reason) => closes.push(reason));
    await session.answerIvr('A', callerSdp);
    await session.startRecording({ kind: 'caller', callerTag: 'A' });
    assert.equal(session.isRecording, true);
    const playing = session.play('A', await prompt());
    await new Promise((r) => setImmediate(r));
    const recording = session.record('A', { silenceTimeoutSec: 60 });
    clock.advance(500); // half a second of the prompt is heard, then the caller hangs up
    const closed = await session.close();

    assert.deepEqual(await playing, { durationMs: 2000, completed: false });
    assert.equal((await recording).reason, 'stopped', 'the IVR endpoint was closed under the Record');
    assert.deepEqual(closes, ['deleted']);
    assert.equal(session.closed, true);
    assert.equal(session.isRecording, false);
    assert.equal(session.ivrPacketsReceived('A'), 0);
    const after = engine.client.commands().slice(engine.client.commands().indexOf('playMedia') + 1);
    assert.deepEqual(after, ['stopRecording', 'delete'], 'no stop media for a deleted call; recording stopped first');
    // The recorder's WAV holds what the caller heard: the prompt, cut where the clock says it stopped.
    assert.ok(closed.sessionRecording, 'the session recording was written');
    const wav = await readWav(closed.sessionRecording.path);
    assert.equal(wav.channels, 2);
    assert.equal(wav.samples.length / 2, 4000, '0.5 s of the 2 s prompt (8 kHz)');
  });

  it('close() is safe to call twice: one teardown, one delete, one close event, the same result', async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    let events = 0;
    session.on('close', () => (events += 1));
    await session.answerIvr('A', callerSdp);
    const first = session.close();
    const second = session.close();
    assert.equal(first, second);
    await first;
    await session.close('engine-lost');
    assert.equal(events, 1);
    assert.equal(engine.client.commands().filter((c) => c === 'delete').length, 1);
  });

  it('close() rejects requests still waiting on the engine, and refuses new work without sending it', async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    await session.answerIvr('A', callerSdp);
    engine.client.hold('offer');
    engine.client.hold('playMedia');
    const offering = session.offer('B', callerSdp);
    const playing = session.play('A', '/x.wav');
    await new Promise((r) => setImmediate(r));
    void session.close();
    await assert.rejects(offering, isClosedError);
    await assert.rejects(playing, isClosedError);
    engine.client.release('offer');
    engine.client.release('playMedia');
    const sentBefore = engine.client.sent.length;
    await assert.rejects(session.play('A', '/x.wav'), isClosedError);
    await assert.rejects(session.answerIvr('C', callerSdp), isClosedError);
    await assert.rejects(session.startRecording({ kind: 'bridge', legs: ['A', 'B'] }), isClosedError);
    assert.equal(engine.client.sent.length, sentBefore, 'nothing sent to the engine after close');
  });

  it('one RecordSession start path: the first start wins, even while it is still being set up', async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    await session.offer('A', callerSdp);
    await session.answer('A', 'B', callerSdp);
    engine.client.hold('startRecording');
    const first = session.startRecording({ kind: 'bridge', legs: ['A', 'B'] });
    const second = session.startRecording({ kind: 'caller', callerTag: 'A' });
    await second;
    engine.client.release('startRecording');
    await first;
    assert.equal(engine.client.commands().filter((c) => c === 'startRecording').length, 1);
    await assert.rejects(
      newSession(fakeEngine(), { recordingDir: '' }).startRecording({ kind: 'bridge', legs: ['A', 'B'] }),
      (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_RECORDING_FAILED',
    );
    await session.close();
  });

  it('MediaService: deleteSession is session.close(); a lost engine closes its sessions through the same teardown', async () => {
    const engine = fakeEngine();
    let lose: ((address: string, at: number) => void) | undefined;
    const media = new MediaService({
      engines: { pick: () => engine, list: () => [], on: (_e, l) => (lose = l), persistent: () => false },
      dataDir: data.dir,
      logger: quietLogger,
      clock,
    });
    await media.answerIvr('c1', 'A', callerSdp);
    await media.answerIvr('c2', 'A', callerSdp);
    const s1 = media.session('c1');
    const s2 = media.session('c2');
    assert.ok(s1 && s2);
    assert.equal(media.openSession('c1'), s1, 'openSession finds the live session');

    await media.deleteSession('c1');
    assert.equal(s1.closed, true);
    assert.equal(media.hasSession('c1'), false);
    assert.deepEqual(await media.deleteSession('c1'), {}, 'deleteSession twice');

    const playing = media.playFile('c2', 'A', '/x.wav');
    await new Promise((r) => setImmediate(r));
    const lost = new Promise<[string[], number]>((resolve) => media.once('sessions-lost', (...a) => resolve(a)));
    const sentBefore = engine.client.sent.length;
    lose?.('fake-engine', EPOCH + 500);
    assert.deepEqual(await lost, [['c2'], EPOCH + 500], 'the calls lost and when their media stopped');
    assert.equal(s2.closed, true);
    assert.deepEqual(await playing, { durationMs: 2000, completed: false });
    await new Promise((r) => setImmediate(r));
    assert.equal(engine.client.sent.length, sentBefore, 'nothing sent to a dead engine');
    assert.equal(media.health().sessions, 0);
    await media.close();
  });

  it('MediaService: an engine that may keep its calls is waited for; those it still holds go on, the rest are lost', async () => {
    const engine = fakeEngine();
    let lose: ((address: string, at: number) => void) | undefined;
    let up = false;
    const held = new Set(['kept']);
    engine.client.query = (params) =>
      held.has(params['call-id'])
        ? Promise.resolve({ result: 'ok' })
        : Promise.reject(new MediaError('MEDIA_ENGINE_ERROR', 'Unknown call-id'));
    const media = new MediaService({
      engines: { pick: () => engine, list: () => [], on: (_e, l) => (lose = l), isHealthy: () => up },
      dataDir: data.dir,
      logger: quietLogger,
      clock,
      restoreWindowMs: 3000,
    });
    await media.answerIvr('kept', 'A', callerSdp);
    await media.answerIvr('gone', 'A', callerSdp);
    const restored = new Promise<string[]>((resolve) => media.once('sessions-restored', resolve));
    const lost = new Promise<string[]>((resolve) => media.once('sessions-lost', resolve));
    lose?.('fake-engine', Date.now());
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(media.hasSession('gone'), true, 'nothing is given up while the engine may come back');
    up = true;
    assert.deepEqual(await restored, ['kept']);
    assert.deepEqual(await lost, ['gone']);
    assert.equal(media.hasSession('kept'), true);
    assert.equal(media.hasSession('gone'), false);

    // An engine that does not come back within the window: every call on it is lost.
    up = false;
    const lostAgain = new Promise<string[]>((resolve) => media.once('sessions-lost', resolve));
    const started = Date.now();
    lose?.('fake-engine', started);
    assert.deepEqual(await lostAgain, ['kept']);
    assert.ok(Date.now() - started >= 2900, `waited the window: ${Date.now() - started} ms`);
    await media.close();
  });

  it("forkAudio: a bridged leg's media is subscribed to an endpoint of ours, heard there, and unsubscribed once", async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    await session.answerIvr('A', callerSdp);
    const heard: Int16Array[] = [];
    const stop = await session.forkAudio('B', (samples) => heard.push(samples));
    const request = engine.client.sent.find((s) => s.command === 'subscribeRequest')!;
    assert.equal(request.params['from-tag'], 'B');
    assert.deepEqual(request.params.codec, { transcode: ['PCMU'] });
    const answer = engine.client.sent.find((s) => s.command === 'subscribeAnswer')!;
    assert.equal(answer.params['to-tag'], 'sub-1');
    assert.deepEqual(answer.params.flags, ['allow transcoding']);
    const sdp = String(answer.params.sdp);
    assert.match(sdp, /a=recvonly/);
    const port = Number(/m=audio (\d+)/.exec(sdp)![1]);
    const packet = Buffer.alloc(12 + 160, 0x7f); // PCMU: 0x7f is silence's neighbour, a small sample
    packet[0] = 0x80;
    packet[1] = 0;
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.send(packet, port, '127.0.0.1', () => r()));
    await eventually(() => heard.length > 0, 'the forked packet is heard', 2000);
    assert.equal(heard[0]!.length, 160);
    stop();
    stop();
    assert.equal(engine.client.commands().filter((c) => c === 'unsubscribe').length, 1);
    socket.send(packet, port, '127.0.0.1');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(heard.length, 1, 'nothing is heard once stopped');
    socket.close();
    await session.close();
  });

  it('forkAudio: closing the session ends a fork without an unsubscribe (the call is deleted whole)', async () => {
    const engine = fakeEngine();
    const session = newSession(engine);
    await session.answerIvr('A', callerSdp);
    const stop = await session.forkAudio('B', () => undefined);
    await session.close();
    stop();
    assert.equal(engine.client.commands().includes('unsubscribe'), false);
    await assert.rejects(
      session.forkAudio('B', () => undefined),
      isClosedError,
    );
  });
});
