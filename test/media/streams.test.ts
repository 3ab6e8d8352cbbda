import assert from 'node:assert/strict';
import { WebSocketServer, type WebSocket } from 'ws';
import { UrlPolicy } from '../../kit/index.js';
import { MediaError } from '../../media/index.js';
import { LegAudioPort, type LegEndpoint } from '../../media/streams/audio-port.js';
import { MediaStream } from '../../media/streams/media-stream.js';
import { mediaMessage, parseInbound } from '../../media/streams/messages.js';
import { Playout, MAX_PENDING_MARKS, MAX_QUEUED_BYTES } from '../../media/streams/playout.js';
import { TrackClock } from '../../media/streams/track-clock.js';
import { parseRtp } from '../../media/rtp-packet.js';
import { eventually } from '../support/wait.js';

/** A leg endpoint with no network: the test pushes the caller's frames and reads what was sent back. */
class FakeEndpoint implements LegEndpoint {
  readonly taps = new Set<(p: Buffer) => void>();
  readonly sent: Buffer[] = [];
  tapPayload(fn: (p: Buffer) => void): () => void {
    this.taps.add(fn);
    return () => void this.taps.delete(fn);
  }
  send(packet: Buffer): boolean {
    this.sent.push(packet);
    return true;
  }
  speak(frame: Buffer): void {
    for (const t of this.taps) t(frame);
  }
}

async function wsServer(): Promise<{ wss: WebSocketServer; url: string; next: Promise<WebSocket> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const next = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
  return { wss, url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/s`, next };
}

const options = (
  url: string,
  endpoint: LegEndpoint,
  extra: Partial<ConstructorParameters<typeof MediaStream>[0]> = {},
) => ({
  url,
  track: 'inbound_track' as const,
  bidirectional: false,
  callSid: 'CA1',
  accountSid: 'acc',
  customParameters: {},
  secret: 's3cret',
  policy: new UrlPolicy({ allowPrivate: true }),
  port: new LegAudioPort(endpoint),
  ...extra,
});

describe('media/streams', () => {
  describe('TrackClock', () => {
    const ticks = (clock: TrackClock, from: number, to: number): number[] => {
      const filled: number[] = [];
      for (let t = from; t <= to; t += 20) clock.tick(t, (at) => filled.push(at));
      return filled;
    };

    it('a track with audio every 20 ms, each packet up to 35 ms late, is owed nothing', () => {
      const c = new TrackClock(0);
      const filled: number[] = [];
      const events: { at: number; tick: boolean }[] = [];
      for (let i = 1; i <= 100; i++) events.push({ at: 20 * i + ((i * 7919) % 36), tick: false });
      for (let t = 10; t <= 2000; t += 20) events.push({ at: t, tick: true });
      events.sort((a, b) => a.at - b.at);
      for (const e of events) {
        if (e.tick) c.tick(e.at, (at) => filled.push(at));
        else c.heard(e.at);
      }
      assert.deepEqual(filled, []);
    });

    it('once silent for 60 ms, a frame for every 20 ms since the last audio, up to the previous tick', () => {
      const c = new TrackClock(0);
      c.heard(100);
      assert.deepEqual(ticks(c, 120, 160), [], 'silent for less than 60 ms');
      assert.deepEqual(ticks(c, 180, 180), [120, 140, 160], 'the 60 ms known silent are filled at once');
      assert.deepEqual(ticks(c, 200, 260), [180, 200, 220, 240], 'then one a tick');
      c.heard(265);
      assert.deepEqual(ticks(c, 280, 300), [], 'audio again: nothing more');
    });

    it('a track that never had audio is filled from its start; a late timer catching up fills what it knows', () => {
      const c = new TrackClock(1000);
      assert.deepEqual(ticks(c, 1020, 1080), [1020, 1040, 1060]);
      const filled: number[] = [];
      // Five ticks at one wake-up, 100 ms late: RTP that arrived meanwhile is not read yet, so only up to 1080.
      for (let i = 0; i < 5; i++) c.tick(1180, (at) => filled.push(at));
      assert.deepEqual(filled, [1080]);
      c.tick(1200, (at) => filled.push(at));
      assert.deepEqual(filled, [1080, 1100, 1120, 1140, 1160, 1180]);
    });
  });

  describe('Playout', () => {
    it('hands out 20 ms frames in order, padding the last; a mark comes back once the audio before it was taken', () => {
      const p = new Playout();
      p.push(Buffer.alloc(200, 1));
      p.mark('a');
      p.push(Buffer.alloc(100, 2));
      p.mark('b');
      const f1 = p.nextFrame()!;
      assert.equal(f1.length, 160);
      assert.deepEqual(p.takeReachedMarks(), []);
      const f2 = p.nextFrame()!;
      assert.deepEqual([f2[39], f2[40], f2[139], f2[140]], [1, 2, 2, 0xff]);
      assert.deepEqual(p.takeReachedMarks(), ['a', 'b']);
      assert.equal(p.nextFrame(), undefined);
    });

    it('clear empties the queue and returns the marks still waiting; more than a minute queued is dropped', () => {
      const p = new Playout();
      p.push(Buffer.alloc(8000));
      p.mark('x');
      assert.deepEqual(p.clear(), ['x']);
      assert.equal(p.nextFrame(), undefined);
      p.push(Buffer.alloc(MAX_QUEUED_BYTES));
      p.push(Buffer.alloc(160));
      assert.equal(p.dropped, 160);
      for (let i = 0; i < MAX_PENDING_MARKS + 50; i++) p.mark(`m${i}`);
      assert.equal(p.pendingMarks, MAX_PENDING_MARKS, 'a flood of marks is bounded');
    });
  });

  it('a media message is the JSON Twilio sends: every number a string, the payload base64', () => {
    assert.deepEqual(JSON.parse(mediaMessage(3, 'MZab', 'inbound', 1, 20.4, Buffer.from([255, 0]))), {
      event: 'media',
      sequenceNumber: '3',
      media: { track: 'inbound', chunk: '1', timestamp: '20', payload: '/wA=' },
      streamSid: 'MZab',
    });
  });

  it('parseInbound takes media, mark and clear and ignores anything else', () => {
    assert.deepEqual(parseInbound('{"event":"clear","streamSid":"MZ1"}'), { event: 'clear' });
    assert.deepEqual(parseInbound('{"event":"mark","mark":{"name":"n"}}'), { event: 'mark', name: 'n' });
    assert.deepEqual(parseInbound('{"event":"media","media":{"payload":"AAEC"}}'), {
      event: 'media',
      pcmu: Buffer.from([0, 1, 2]),
    });
    for (const bad of ['', 'null', '{"event":"media","media":{"payload":"%%"}}', '{"event":"start"}', '[1]']) {
      assert.equal(parseInbound(bad), undefined, bad);
    }
  });

  it('a URL the policy refuses (loopback without allowPrivate) never connects: MEDIA_STREAM_FAILED', async () => {
    const { wss, url } = await wsServer();
    let connected = false;
    wss.on('connection', () => (connected = true));
    const s = new MediaStream(options(url, new FakeEndpoint(), { policy: UrlPolicy.strict }));
    await assert.rejects(s.start(), (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_STREAM_FAILED');
    await assert.rejects(
      new MediaStream(options('https://example.test/', new FakeEndpoint())).start(),
      (e: unknown) => e instanceof MediaError && e.code === 'MEDIA_STREAM_FAILED',
    );
    assert.equal(connected, false);
    wss.close();
  });

  it('a consumer that stops reading loses frames (counted); the caller side is never held up', async () => {
    const { wss, url, next } = await wsServer();
    const endpoint = new FakeEndpoint();
    const s = new MediaStream(options(url, endpoint, { maxSendBufferBytes: 16 * 1024 }));
    await s.start();
    const server = await next;
    (server as unknown as { _socket: { pause(): void } })._socket.pause(); // reads nothing more
    const started = Date.now();
    for (let i = 0; i < 50_000; i++) endpoint.speak(Buffer.alloc(160, i & 0xff));
    const spent = Date.now() - started;
    assert.ok(spent < 3000, `50,000 frames (1,000 s of audio) handed over in ${spent} ms`);
    assert.ok(s.stats.framesDropped > 25_000, `dropped ${s.stats.framesDropped}`);
    assert.equal(s.stats.framesSent + s.stats.framesDropped, 50_000);
    server.terminate();
    await s.closed;
    wss.close();
  });

  it('a silent caller is streamed as silence frames, 50 a second, chunks and timestamps advancing', async () => {
    const { wss, url, next } = await wsServer();
    const endpoint = new FakeEndpoint();
    const s = new MediaStream(options(url, endpoint, { track: 'both_tracks' }));
    await s.start();
    const server = await next;
    const media: any[] = [];
    server.on('message', (d) => {
      const m = JSON.parse(d.toString());
      if (m.event === 'media') media.push({ ...m.media, at: Date.now() });
    });
    for (let i = 0; i < 10; i++) {
      endpoint.speak(Buffer.alloc(160, 9));
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 1200));
    await s.stop();
    const inbound = media.filter((m) => m.track === 'inbound');
    const outbound = media.filter((m) => m.track === 'outbound');
    assert.equal(inbound.filter((m) => m.payload === Buffer.alloc(160, 9).toString('base64')).length, 10);
    const silence = Buffer.alloc(160, 0xff).toString('base64');
    assert.ok(inbound.slice(10).every((m) => m.payload === silence));
    // 1.4 s of stream: about 70 frames on each track whether anything was heard or not.
    for (const track of [inbound, outbound]) {
      assert.ok(track.length >= 55 && track.length <= 75, `${track.length} frames in 1.4 s`);
      assert.deepEqual(
        track.map((m) => Number(m.chunk)),
        track.map((_m, i) => i + 1),
      );
    }
    const stamps = outbound.map((m) => Number(m.timestamp));
    assert.ok(
      stamps.every((t, i) => i === 0 || t - stamps[i - 1]! === 20),
      stamps.join(' '),
    );
    wss.close();
  });

  it('a bidirectional stream plays the server audio to the caller at 20 ms a frame and answers marks', async () => {
    const { wss, url, next } = await wsServer();
    const endpoint = new FakeEndpoint();
    const s = new MediaStream(options(url, endpoint, { bidirectional: true }));
    await s.start();
    const server = await next;
    const got: any[] = [];
    server.on('message', (d) => got.push(JSON.parse(d.toString())));
    server.send(JSON.stringify({ event: 'media', media: { payload: Buffer.alloc(1600, 7).toString('base64') } }));
    server.send(JSON.stringify({ event: 'mark', mark: { name: 'done' } }));
    const t0 = Date.now();
    await eventually(() => got.find((m) => m.event === 'mark'), 'the mark', 3000);
    const took = Date.now() - t0;
    assert.ok(took >= 150 && took < 800, `ten frames played in about 200 ms (${took})`);
    const packets = endpoint.sent.map((b) => parseRtp(b)!);
    assert.ok(packets.every((p) => p.payloadType === 0 && p.payload.length === 160));
    const audio = packets.filter((p) => p.payload[0] === 7);
    assert.equal(audio.length, 10);
    // Silence (0xFF) before the server's audio and after it: one RTP stream, its clock never stops.
    assert.ok(packets.every((p) => p.payload[0] === 7 || p.payload.every((b) => b === 0xff)));
    for (let i = 1; i < packets.length; i++) {
      assert.equal(packets[i]!.sequence, (packets[i - 1]!.sequence + 1) & 0xffff);
      assert.equal(packets[i]!.timestamp, (packets[i - 1]!.timestamp + 160) >>> 0);
    }
    const sentBefore = endpoint.sent.length;
    await new Promise((r) => setTimeout(r, 500));
    const idle = endpoint.sent.length - sentBefore;
    assert.ok(idle >= 18 && idle <= 27, `silence RTP at 50 a second with nothing queued (${idle} in 500 ms)`);
    await s.stop();
    await eventually(() => got.find((m) => m.event === 'stop'), 'the stop message', 3000);
    wss.close();
  });
});
